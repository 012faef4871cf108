/* Attack helper for tests/attacks.rs: new namespaces and the new mount API.
 *
 *   ns   tries unshare(CLONE_NEWUSER), unshare(CLONE_NEWNS),
 *        clone(CLONE_NEWUSER | CLONE_NEWNS), clone3 with the same flags, and,
 *        in any new user and mount namespace it got, maps its uid and builds
 *        a tmpfs with fsopen/fsconfig/fsmount, then clones the root with
 *        open_tree. Also fsopen, fspick, open_tree and mount_setattr in the
 *        sandbox itself. Prints `ESCAPE <what>` for each call that worked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_fspick
#define SYS_fspick 433
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#define FSCONFIG_CMD_CREATE 6
#define OPEN_TREE_CLONE 1
#define AT_RECURSIVE_ 0x8000

struct clone_args_ {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

static void put(const char *path, const char *text) {
    int fd = open(path, O_WRONLY);
    if (fd >= 0) {
        if (write(fd, text, strlen(text)) < 0) {}
        close(fd);
    }
}

/* In a new user and mount namespace: become root there, then mount. */
static int inside(const char *how, unsigned uid, unsigned gid) {
    char map[64];
    put("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "0 %u 1", uid);
    put("/proc/self/uid_map", map);
    snprintf(map, sizeof map, "0 %u 1", gid);
    put("/proc/self/gid_map", map);
    int fs = (int)syscall(SYS_fsopen, "tmpfs", 0);
    if (fs >= 0) {
        printf("ESCAPE fsopen in %s\n", how);
        if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0) {
            int m = (int)syscall(SYS_fsmount, fs, 0, 0);
            if (m >= 0) printf("ESCAPE fsmount in %s\n", how);
        }
    } else {
        printf("fsopen in %s refused: %s\n", how, strerror(errno));
    }
    int t = (int)syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE | AT_RECURSIVE_);
    if (t >= 0) printf("ESCAPE open_tree in %s\n", how);
    fflush(stdout);
    return 0;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    unsigned uid = getuid(), gid = getgid();

    if (syscall(SYS_unshare, CLONE_NEWUSER) == 0) printf("ESCAPE unshare-user\n");
    else printf("unshare-user refused: %s\n", strerror(errno));

    pid_t c = fork();
    if (c == 0) {
        if (syscall(SYS_unshare, CLONE_NEWNS) == 0) printf("ESCAPE unshare-mount\n");
        else printf("unshare-mount refused: %s\n", strerror(errno));
        _exit(0);
    }
    waitpid(c, NULL, 0);

    long r = syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
    if (r == 0) _exit(inside("clone", uid, gid));
    if (r > 0) {
        printf("ESCAPE clone-newuser\n");
        waitpid((pid_t)r, NULL, 0);
    } else {
        printf("clone-newuser refused: %s\n", strerror(errno));
    }

    struct clone_args_ a = {.flags = CLONE_NEWUSER | CLONE_NEWNS, .exit_signal = SIGCHLD};
    r = syscall(SYS_clone3, &a, sizeof a);
    if (r == 0) _exit(inside("clone3", uid, gid));
    if (r > 0) {
        printf("ESCAPE clone3-newuser\n");
        waitpid((pid_t)r, NULL, 0);
    } else {
        printf("clone3-newuser refused: %s\n", strerror(errno));
    }

    if (syscall(SYS_fsopen, "tmpfs", 0) >= 0) printf("ESCAPE fsopen\n");
    if (syscall(SYS_fspick, AT_FDCWD, "/", 0) >= 0) printf("ESCAPE fspick\n");
    if (syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE) >= 0) printf("ESCAPE open_tree\n");
    char attr[32] = {0};
    if (syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, attr, sizeof attr) == 0)
        printf("ESCAPE mount_setattr\n");
    printf("DONE\n");
    return 0;
}
