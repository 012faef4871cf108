/* Attack helper for tests/attacks.rs: sockets the filter must refuse.
 *
 *   sockets dgram PATH TEXT   send TEXT to the unix datagram socket at PATH
 *                             through a datagram socket pair (sendto, and
 *                             connect + send), a new datagram socket, and a
 *                             seqpacket pair. Prints `made <kind>` for each
 *                             socket it got and `SENT <how>` per datagram.
 *   sockets netlink           open a netlink socket of each protocol and
 *                             bind it to multicast group 1. Prints
 *                             `made netlink <name>` or `refused netlink <name>`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void send_via(const char *how, int fd, const struct sockaddr_un *to, const char *text) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s via %s", text, how);
    if (sendto(fd, msg, strlen(msg), 0, (const struct sockaddr *)to, sizeof *to) >= 0)
        printf("SENT %s sendto\n", how);
    else
        printf("not sent %s sendto: %s\n", how, strerror(errno));
    if (connect(fd, (const struct sockaddr *)to, sizeof *to) == 0 &&
        send(fd, msg, strlen(msg), 0) >= 0)
        printf("SENT %s connect\n", how);
    else
        printf("not sent %s connect: %s\n", how, strerror(errno));
}

static int dgram(const char *path, const char *text) {
    struct sockaddr_un to = {.sun_family = AF_UNIX};
    snprintf(to.sun_path, sizeof to.sun_path, "%s", path);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0) {
        printf("made pair-dgram\n");
        send_via("pair-dgram", sv[0], &to, text);
    } else {
        printf("refused pair-dgram: %s\n", strerror(errno));
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0) {
        printf("made pair-seqpacket\n");
        send_via("pair-seqpacket", sv[0], &to, text);
    } else {
        printf("refused pair-seqpacket: %s\n", strerror(errno));
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (fd >= 0) {
        printf("made socket-dgram\n");
        send_via("socket-dgram", fd, &to, text);
    } else {
        printf("refused socket-dgram: %s\n", strerror(errno));
    }
    return 0;
}

static int netlink(void) {
    static const struct {
        int proto;
        const char *name;
    } all[] = {
        {NETLINK_ROUTE, "route"},
        {NETLINK_SOCK_DIAG, "sock_diag"},
        {NETLINK_XFRM, "xfrm"},
        {NETLINK_AUDIT, "audit"},
        {NETLINK_CONNECTOR, "connector"},
        {NETLINK_NETFILTER, "netfilter"},
        {NETLINK_KOBJECT_UEVENT, "kobject_uevent"},
        {NETLINK_GENERIC, "generic"},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, all[i].proto);
        if (fd < 0) fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, all[i].proto);
        if (fd < 0) {
            printf("refused netlink %s: %s\n", all[i].name, strerror(errno));
            continue;
        }
        struct sockaddr_nl a = {.nl_family = AF_NETLINK, .nl_groups = 1};
        if (all[i].proto == NETLINK_ROUTE) a.nl_groups = 0;
        if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0)
            printf("made netlink %s\n", all[i].name);
        else
            printf("made netlink %s (bind: %s)\n", all[i].name, strerror(errno));
        close(fd);
    }
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && strcmp(argv[1], "dgram") == 0) return dgram(argv[2], argv[3]);
    if (argc == 2 && strcmp(argv[1], "netlink") == 0) return netlink();
    fprintf(stderr, "usage: sockets dgram PATH TEXT | sockets netlink\n");
    return 2;
}
