#define _GNU_SOURCE
#include "CMeshLink.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <linux/netlink.h>

#define CML_MAX_SIGNAL 65

static volatile sig_atomic_t cml_signal_fd = -1;
static struct sigaction cml_saved[CML_MAX_SIGNAL];
static unsigned char cml_saved_valid[CML_MAX_SIGNAL];

int cml_pipe_nonblocking(int fds[2]) {
    return pipe2(fds, O_CLOEXEC | O_NONBLOCK);
}

static void cml_signal_handler(int signo) {
    int saved_errno = errno;
    int fd = cml_signal_fd;
    if (fd >= 0) {
        unsigned char byte = (unsigned char)signo;
        ssize_t ignored = write(fd, &byte, 1);  // a full pipe already holds a pending wake-up
        (void)ignored;
    }
    errno = saved_errno;
}

int cml_signal_forward(int signo, int write_fd) {
    if (signo <= 0 || signo >= CML_MAX_SIGNAL) { errno = EINVAL; return -1; }
    cml_signal_fd = write_fd;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = cml_signal_handler;
    sigemptyset(&action.sa_mask);
    // SIGCHLD only when a child ends (not when it stops or continues).
    action.sa_flags = SA_RESTART | (signo == SIGCHLD ? SA_NOCLDSTOP : 0);
    struct sigaction previous;
    if (sigaction(signo, &action, &previous) != 0) return -1;
    if (!cml_saved_valid[signo]) {
        cml_saved[signo] = previous;
        cml_saved_valid[signo] = 1;
    }
    // The calling thread runs the poll loop: make sure it can receive the signal.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    pthread_sigmask(SIG_UNBLOCK, &set, 0);
    return 0;
}

void cml_signal_unforward(int write_fd) {
    if (cml_signal_fd == write_fd) cml_signal_fd = -1;
}

int cml_signal_restore(int signo) {
    if (signo <= 0 || signo >= CML_MAX_SIGNAL) { errno = EINVAL; return -1; }
    if (!cml_saved_valid[signo]) return 0;
    cml_saved_valid[signo] = 0;
    return sigaction(signo, &cml_saved[signo], 0);
}

short cml_pollrdhup(void) { return POLLRDHUP; }

int cml_set_child_subreaper(void) { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

int cml_uevent_socket(void) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
    if (fd < 0) return -1;
    struct sockaddr_nl address;
    memset(&address, 0, sizeof address);
    address.nl_family = AF_NETLINK;
    address.nl_groups = 1;  /* kernel uevents */
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int cml_msg_nosignal(void) { return MSG_NOSIGNAL; }
int cml_msg_dontwait(void) { return MSG_DONTWAIT; }
int cml_sock_cloexec(void) { return SOCK_CLOEXEC; }
int cml_sock_nonblock(void) { return SOCK_NONBLOCK; }
