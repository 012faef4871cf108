/* Attack helper for tests/attacks.rs: reach other processes of the sandbox.
 *
 *   ptrace            for every visible pid but its own: PTRACE_SEIZE,
 *                     PTRACE_ATTACH, process_vm_readv/writev (at an unmapped
 *                     address, so nothing is read or written: EFAULT means
 *                     the permission check passed) and pidfd_getfd of fds
 *                     0-2. Prints `pid N COMM` for each pid, `pid1 COMM`,
 *                     and `ESCAPE <how> N COMM` for each call that worked.
 *   ptrace --stop N   a bare attach: PTRACE_ATTACH, wait, detach with
 *                     SIGSTOP, so N is left stopped. Prints `STOPPED N` or
 *                     `STOP-FAILED N errno`.
 *   ptrace --selfstop stop itself (SIGSTOP) and stay stopped.
 *   ptrace --traceme  fork; the child asks to be traced (PTRACE_TRACEME)
 *                     and stops itself; the parent never lets it go and
 *                     waits forever. Prints `TRACED` or `TRACEME-REFUSED`.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

static void comm_of(int pid, char *out, size_t n) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    FILE *f = fopen(path, "r");
    out[0] = 0;
    if (f) {
        if (fgets(out, (int)n, f)) out[strcspn(out, "\n")] = 0;
        fclose(f);
    }
    if (!out[0]) snprintf(out, n, "?");
}

static int permitted(long r) {
    /* EFAULT: the permission check passed, only the address was bad. */
    return r >= 0 || errno == EFAULT;
}

static void probe(int pid) {
    char comm[64];
    comm_of(pid, comm, sizeof comm);
    printf("pid %d %s\n", pid, comm);

    if (ptrace(PTRACE_SEIZE, pid, 0, 0) == 0) {
        printf("ESCAPE ptrace-seize %d %s\n", pid, comm);
        if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) == 0) waitpid(pid, NULL, __WALL);
        ptrace(PTRACE_DETACH, pid, 0, 0);
    }
    if (ptrace(PTRACE_ATTACH, pid, 0, 0) == 0) {
        printf("ESCAPE ptrace-attach %d %s\n", pid, comm);
        waitpid(pid, NULL, __WALL);
        ptrace(PTRACE_DETACH, pid, 0, 0);
    }
    char buf[8];
    struct iovec local = {buf, sizeof buf};
    struct iovec remote = {(void *)8, sizeof buf};
    long r = syscall(SYS_process_vm_readv, pid, &local, 1, &remote, 1, 0);
    if (permitted(r)) printf("ESCAPE process_vm_readv %d %s\n", pid, comm);
    r = syscall(SYS_process_vm_writev, pid, &local, 1, &remote, 1, 0);
    if (permitted(r)) printf("ESCAPE process_vm_writev %d %s\n", pid, comm);
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd >= 0) {
        for (int fd = 0; fd < 3; fd++) {
            int got = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
            if (got >= 0) {
                printf("ESCAPE pidfd_getfd %d %s fd %d\n", pid, comm, fd);
                close(got);
            }
        }
        close(pidfd);
    }
    fflush(stdout);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && strcmp(argv[1], "--stop") == 0) {
        int pid = atoi(argv[2]);
        if (ptrace(PTRACE_ATTACH, pid, 0, 0) != 0) {
            printf("STOP-FAILED %d %s\n", pid, strerror(errno));
            return 0;
        }
        waitpid(pid, NULL, __WALL);
        ptrace(PTRACE_DETACH, pid, 0, SIGSTOP);
        printf("STOPPED %d\n", pid);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--selfstop") == 0) {
        raise(SIGSTOP);
        for (;;) pause();
    }
    if (argc == 2 && strcmp(argv[1], "--traceme") == 0) {
        pid_t child = fork();
        if (child == 0) {
            if (ptrace(PTRACE_TRACEME, 0, 0, 0) == 0)
                printf("TRACED\n");
            else
                printf("TRACEME-REFUSED %s\n", strerror(errno));
            fflush(stdout);
            raise(SIGSTOP);
            for (;;) pause();
        }
        for (;;) pause();
    }
    char comm[64];
    comm_of(1, comm, sizeof comm);
    printf("pid1 %s\n", comm);
    DIR *d = opendir("/proc");
    if (!d) {
        perror("/proc");
        return 1;
    }
    int self = getpid();
    struct dirent *e;
    int pids[4096], n = 0;
    while ((e = readdir(d)) && n < 4096) {
        int pid = atoi(e->d_name);
        if (pid > 0 && pid != self) pids[n++] = pid;
    }
    closedir(d);
    for (int i = 0; i < n; i++) probe(pids[i]);
    printf("DONE\n");
    return 0;
}
