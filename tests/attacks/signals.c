/* Attack helper for tests/outcomes.rs: forge the outcome of a limit.
 *
 *   signals MODE [SIGNAL [FILE]]
 *
 * Makes the kernel deliver SIGNAL (default 25, SIGXFSZ) to this very
 * process by MODE, so that, if it gets through, the process dies of it as
 * it would at the seal's limit:
 *
 *   kill, tkill, tgkill, sigqueue (rt_sigqueueinfo), tgsigqueue
 *   (rt_tgsigqueueinfo), pidfd (pidfd_send_signal)   the signal calls
 *   clone      a child whose exit signal is SIGNAL, which exits at once
 *   pdeathsig  prctl(PR_SET_PDEATHSIG, SIGNAL) (its parent, the sandbox's
 *              init, outlives it: only the answer is reported)
 *   fsetsig    a pipe with O_ASYNC and F_SETSIG SIGNAL, then written
 *   tiocsig    a new session with a pty as its terminal, then TIOCSIG on
 *              the master (the foreground group is this process's; recent
 *              kernels answer EINVAL to any signal but INT, QUIT, TSTP)
 *   timer      timer_create with SIGEV_SIGNAL SIGNAL, armed
 *   mq         mq_notify with SIGEV_SIGNAL SIGNAL, then a message
 *   setrlimit, prlimit   RLIMIT_FSIZE lowered to 4 KiB, then 64 KiB
 *              written to FILE (the kernel's own SIGXFSZ)
 *   fanotify   fanotify_init and fanotify_mark (no signal: host activity)
 *   timer-null timer_create without a sigevent (must work)
 *
 * Prints `REFUSED <call> <EPERM|ENOSYS>` for a call the sandbox refused,
 * `ERROR <call> <why>` for any other failure, `SURVIVED <mode>` when the
 * call worked and the process lived, `WROTE <n>` after a write, and
 * `DONE`; exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_fanotify_init
#define SYS_fanotify_init 300
#endif
#ifndef SYS_fanotify_mark
#define SYS_fanotify_mark 301
#endif
#define FAN_CLASS_NOTIF_ 0x0
#define FAN_REPORT_FID_ 0x200
#define FAN_MARK_ADD_ 0x1
#define FAN_OPEN_ 0x20

static const char *name_of(int e) {
    switch (e) {
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    default: return strerror(e);
    }
}

/* A call's result: -1 is a refusal (EPERM, ENOSYS) or an error. */
static int said(const char *call, long r) {
    if (r != -1) return 0;
    int e = errno;
    if (e == EPERM || e == ENOSYS) printf("REFUSED %s %s\n", call, name_of(e));
    else printf("ERROR %s %s\n", call, strerror(e));
    return -1;
}

/* The signal had its chance: still here. */
static void survived(const char *mode) {
    struct timespec t = {1, 0};
    while (nanosleep(&t, &t) == -1 && errno == EINTR) {}
    printf("SURVIVED %s\n", mode);
}

static void write_file(const char *path) {
    static char buf[65536];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { printf("ERROR open %s\n", strerror(errno)); return; }
    /* A write that starts past RLIMIT_FSIZE is the one the kernel signals. */
    size_t done = 0;
    while (done < sizeof buf) {
        ssize_t n = write(fd, buf + done, sizeof buf - done);
        if (n < 0) { printf("ERROR write %s\n", strerror(errno)); break; }
        done += (size_t)n;
    }
    printf("WROTE %zu\n", done);
    close(fd);
}

static siginfo_t queued(int sig) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_signo = sig;
    info.si_code = SI_QUEUE;
    info.si_pid = getpid();
    info.si_uid = getuid();
    return info;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) { fprintf(stderr, "usage: signals MODE [SIGNAL [FILE]]\n"); return 2; }
    const char *mode = argv[1];
    int sig = argc > 2 ? atoi(argv[2]) : SIGXFSZ;
    const char *file = argc > 3 ? argv[3] : "/dev/null";
    pid_t me = getpid();
    pid_t tid = (pid_t)syscall(SYS_gettid);

    if (!strcmp(mode, "kill")) {
        if (!said("kill", kill(me, sig))) survived(mode);
    } else if (!strcmp(mode, "tkill")) {
        if (!said("tkill", syscall(SYS_tkill, tid, sig))) survived(mode);
    } else if (!strcmp(mode, "tgkill")) {
        if (!said("tgkill", syscall(SYS_tgkill, me, tid, sig))) survived(mode);
    } else if (!strcmp(mode, "sigqueue")) {
        siginfo_t info = queued(sig);
        if (!said("rt_sigqueueinfo", syscall(SYS_rt_sigqueueinfo, me, sig, &info))) survived(mode);
    } else if (!strcmp(mode, "tgsigqueue")) {
        siginfo_t info = queued(sig);
        if (!said("rt_tgsigqueueinfo", syscall(SYS_rt_tgsigqueueinfo, me, tid, sig, &info)))
            survived(mode);
    } else if (!strcmp(mode, "pidfd")) {
        long fd = syscall(SYS_pidfd_open, me, 0);
        if (!said("pidfd_open", fd) &&
            !said("pidfd_send_signal", syscall(SYS_pidfd_send_signal, (int)fd, sig, NULL, 0)))
            survived(mode);
    } else if (!strcmp(mode, "clone")) {
        long r = syscall(SYS_clone, (unsigned long)sig, 0, 0, 0, 0);
        if (r == 0) _exit(0);
        if (!said("clone", r)) survived(mode);
    } else if (!strcmp(mode, "pdeathsig")) {
        if (!said("prctl", prctl(PR_SET_PDEATHSIG, sig))) printf("SURVIVED %s\n", mode);
    } else if (!strcmp(mode, "fsetsig")) {
        int p[2];
        if (pipe(p) == 0 && !said("fcntl(F_SETOWN)", fcntl(p[0], F_SETOWN, me)) &&
            !said("fcntl(F_SETSIG)", fcntl(p[0], F_SETSIG, sig)) &&
            !said("fcntl(F_SETFL)", fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK))) {
            if (write(p[1], "x", 1) != 1) printf("ERROR write %s\n", strerror(errno));
            survived(mode);
        }
    } else if (!strcmp(mode, "tiocsig")) {
        int m = posix_openpt(O_RDWR | O_NOCTTY);
        if (!said("posix_openpt", m) && !said("grantpt", grantpt(m)) &&
            !said("unlockpt", unlockpt(m)) && !said("setsid", setsid())) {
            int s = open(ptsname(m), O_RDWR); /* a session leader's first tty */
            if (!said("open(pts)", s) && !said("ioctl(TIOCSIG)", ioctl(m, TIOCSIG, sig)))
                survived(mode);
        }
    } else if (!strcmp(mode, "timer")) {
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_SIGNAL;
        sev.sigev_signo = sig;
        timer_t t;
        if (!said("timer_create", timer_create(CLOCK_MONOTONIC, &sev, &t))) {
            struct itimerspec its = {{0, 0}, {0, 10 * 1000 * 1000}};
            if (!said("timer_settime", timer_settime(t, 0, &its, NULL))) survived(mode);
        }
    } else if (!strcmp(mode, "timer-null")) {
        int kt;
        if (!said("timer_create", syscall(SYS_timer_create, CLOCK_MONOTONIC, NULL, &kt)))
            printf("MADE timer_create\n");
    } else if (!strcmp(mode, "mq")) {
        char qname[64];
        snprintf(qname, sizeof qname, "/sealc-outcomes-%d", (int)me);
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_SIGNAL;
        sev.sigev_signo = sig;
        mqd_t q = mq_open(qname, O_CREAT | O_RDWR, 0600, NULL);
        if (q == (mqd_t)-1) {
            /* No queue here (the sandbox's mqueue may refuse one): the
               filter's answer still shows on a bad descriptor (EBADF). */
            said("mq_notify", syscall(SYS_mq_notify, -1, &sev));
        } else {
            mq_unlink(qname);
            if (!said("mq_notify", mq_notify(q, &sev))) {
                if (mq_send(q, "x", 1, 0) != 0) printf("ERROR mq_send %s\n", strerror(errno));
                survived(mode);
            }
        }
    } else if (!strcmp(mode, "setrlimit") || !strcmp(mode, "prlimit")) {
        struct rlimit low = {4096, 4096};
        long r = !strcmp(mode, "setrlimit")
                     ? setrlimit(RLIMIT_FSIZE, &low)
                     : syscall(SYS_prlimit64, 0, RLIMIT_FSIZE, &low, NULL);
        said(!strcmp(mode, "setrlimit") ? "setrlimit" : "prlimit64", r);
        write_file(file);
    } else if (!strcmp(mode, "fanotify")) {
        long fd = syscall(SYS_fanotify_init, FAN_CLASS_NOTIF_ | FAN_REPORT_FID_, O_RDONLY);
        if (!said("fanotify_init", fd)) printf("MADE fanotify_init\n");
        /* A bad descriptor: EBADF, unless the call itself is refused. */
        if (!said("fanotify_mark", syscall(SYS_fanotify_mark, -1, FAN_MARK_ADD_, FAN_OPEN_,
                                           AT_FDCWD, "/")))
            printf("MADE fanotify_mark\n");
    } else {
        fprintf(stderr, "signals: no mode %s\n", mode);
        return 2;
    }
    printf("DONE\n");
    return 0;
}
