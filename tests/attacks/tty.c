/* Attack helper for tests/attacks.rs: reach the caller's terminal.
 *
 *   tty TEXT   on each of fds 0-2 that is a terminal: make it the controlling
 *              terminal (setsid, then TIOCSCTTY), push TEXT and a newline
 *              into its input queue (TIOCSTI, one byte at a time), turn echo
 *              and canonical mode off (tcsetattr), set the window to 7x3
 *              (TIOCSWINSZ), and try TIOCLINUX. Prints what each call did,
 *              never TEXT itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: tty TEXT\n");
        return 2;
    }
    if (setsid() < 0) printf("setsid: %s\n", strerror(errno));
    int ttys = 0;
    for (int fd = 0; fd < 3; fd++) {
        if (!isatty(fd)) {
            printf("fd %d: not a terminal\n", fd);
            continue;
        }
        ttys++;
        if (ioctl(fd, TIOCSCTTY, 0) == 0)
            printf("fd %d: TIOCSCTTY made it the controlling terminal\n", fd);
        else
            printf("fd %d: TIOCSCTTY refused: %s\n", fd, strerror(errno));
        size_t pushed = 0, len = strlen(argv[1]);
        for (size_t i = 0; i <= len; i++) {
            char c = i < len ? argv[1][i] : '\n';
            if (ioctl(fd, TIOCSTI, &c) == 0) pushed++;
            else if (i == 0) printf("fd %d: TIOCSTI refused: %s\n", fd, strerror(errno));
        }
        if (pushed) printf("fd %d: TIOCSTI pushed %zu bytes\n", fd, pushed);
        struct termios t;
        if (tcgetattr(fd, &t) == 0) {
            t.c_lflag &= ~(tcflag_t)(ECHO | ICANON);
            if (tcsetattr(fd, TCSANOW, &t) == 0)
                printf("fd %d: tcsetattr turned echo off\n", fd);
            else
                printf("fd %d: tcsetattr refused: %s\n", fd, strerror(errno));
        }
        struct winsize w = {.ws_row = 3, .ws_col = 7};
        if (ioctl(fd, TIOCSWINSZ, &w) == 0)
            printf("fd %d: TIOCSWINSZ set 7x3\n", fd);
        else
            printf("fd %d: TIOCSWINSZ refused: %s\n", fd, strerror(errno));
        char sub = 12; /* TIOCL_GETFGCONSOLE: harmless */
        if (ioctl(fd, TIOCLINUX, &sub) >= 0) printf("fd %d: TIOCLINUX answered\n", fd);
    }
    printf("ttys %d\n", ttys);
    return 0;
}
