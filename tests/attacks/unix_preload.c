/* Attack helper for tests/attacks.rs: a library whose constructor, in every
 * process that loads it, tries what the command's filter refuses in modes
 * `none` and `proxy`: a new unix socket, connected to the host's stream
 * socket at SOCK (given with -DSOCK=...). When it gets through it sends
 * `REACHED by <exe> uid <uid>` there and prints `ESCAPE ...` on stderr. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

__attribute__((constructor)) static void reach(void) {
    char exe[256] = "?", msg[400];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 1] = 0;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) {
        fprintf(stderr, "[%s] socket(AF_UNIX): %s\n", exe, strerror(errno));
        return;
    }
    struct sockaddr_un to = {.sun_family = AF_UNIX};
    snprintf(to.sun_path, sizeof to.sun_path, "%s", SOCK);
    if (connect(fd, (const struct sockaddr *)&to, sizeof to) < 0) {
        fprintf(stderr, "[%s] connect: %s\n", exe, strerror(errno));
        close(fd);
        return;
    }
    int len = snprintf(msg, sizeof msg, "REACHED by %s uid %d\n", exe, (int)getuid());
    if (write(fd, msg, (size_t)len) == len)
        fprintf(stderr, "ESCAPE: %s", msg);
    close(fd);
}
