/* Attack helper for tests/attacks.rs: a library whose constructor leaves a
 * mark at MARK (a path given with -DMARK=...) when it is loaded anywhere that
 * can write there, naming the process that loaded it. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void mark(void) {
    int fd = open(MARK, O_WRONLY | O_CREAT | O_APPEND, 0666);
    if (fd < 0) return;
    char comm[64] = "?", line[160];
    int c = open("/proc/self/comm", O_RDONLY);
    if (c >= 0) {
        ssize_t n = read(c, comm, sizeof comm - 1);
        comm[n > 0 ? n : 0] = 0;
        comm[strcspn(comm, "\n")] = 0;
        close(c);
    }
    int n = snprintf(line, sizeof line, "loaded by %s pid %d uid %d\n", comm, (int)getpid(), (int)getuid());
    if (write(fd, line, (size_t)n) < 0) {}
    close(fd);
}
