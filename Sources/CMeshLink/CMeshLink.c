#define _GNU_SOURCE
#include "CMeshLink.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <linux/netlink.h>

#define CML_MAX_SIGNAL 65
/* Pipes that signals go to: one per poll loop that asked (a process normally has one; a test
   process runs several daemons and loops at once). The handler writes a signal's number to every
   pipe that asked for that signal, and to no other. */
#define CML_SLOTS 32

static volatile sig_atomic_t cml_slot_fd[CML_SLOTS] = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
static volatile sig_atomic_t cml_slot_wants[CML_SLOTS][CML_MAX_SIGNAL];
static struct sigaction cml_saved[CML_MAX_SIGNAL];
static unsigned char cml_saved_valid[CML_MAX_SIGNAL];
/* Registration (never the handler) runs under this lock: loops on other threads register too. */
static pthread_mutex_t cml_signal_lock = PTHREAD_MUTEX_INITIALIZER;

int cml_pipe_nonblocking(int fds[2]) {
    return pipe2(fds, O_CLOEXEC | O_NONBLOCK);
}

static void cml_signal_handler(int signo) {
    int saved_errno = errno;
    if (signo > 0 && signo < CML_MAX_SIGNAL) {
        for (int i = 0; i < CML_SLOTS; i++) {
            int fd = cml_slot_fd[i];
            if (fd < 0 || !cml_slot_wants[i][signo]) continue;
            unsigned char byte = (unsigned char)signo;
            ssize_t ignored = write(fd, &byte, 1);  // a full pipe already holds a pending wake-up
            (void)ignored;
        }
    }
    errno = saved_errno;
}

int cml_signal_forward(int signo, int write_fd) {
    if (signo <= 0 || signo >= CML_MAX_SIGNAL || write_fd < 0) { errno = EINVAL; return -1; }
    pthread_mutex_lock(&cml_signal_lock);
    int slot = -1;
    for (int i = 0; i < CML_SLOTS && slot < 0; i++) if (cml_slot_fd[i] == write_fd) slot = i;
    for (int i = 0; i < CML_SLOTS && slot < 0; i++) {
        if (cml_slot_fd[i] != -1) continue;
        slot = i;
        for (int s = 0; s < CML_MAX_SIGNAL; s++) cml_slot_wants[i][s] = 0;
        cml_slot_fd[i] = write_fd;
    }
    if (slot < 0) { pthread_mutex_unlock(&cml_signal_lock); errno = EMFILE; return -1; }
    cml_slot_wants[slot][signo] = 1;
    if (!cml_saved_valid[signo]) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = cml_signal_handler;
        sigemptyset(&action.sa_mask);
        // SIGCHLD only when a child ends (not when it stops or continues).
        action.sa_flags = SA_RESTART | (signo == SIGCHLD ? SA_NOCLDSTOP : 0);
        struct sigaction previous;
        if (sigaction(signo, &action, &previous) != 0) {
            int saved = errno;
            cml_slot_wants[slot][signo] = 0;
            pthread_mutex_unlock(&cml_signal_lock);
            errno = saved;
            return -1;
        }
        cml_saved[signo] = previous;
        cml_saved_valid[signo] = 1;
    }
    pthread_mutex_unlock(&cml_signal_lock);
    // The calling thread runs the poll loop: make sure it can receive the signal.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    pthread_sigmask(SIG_UNBLOCK, &set, 0);
    return 0;
}

/* Whether a pipe still asks for signo; under the lock. */
static int cml_signal_wanted(int signo) {
    for (int i = 0; i < CML_SLOTS; i++) if (cml_slot_fd[i] >= 0 && cml_slot_wants[i][signo]) return 1;
    return 0;
}

int cml_signal_restore(int signo, int write_fd) {
    if (signo <= 0 || signo >= CML_MAX_SIGNAL) { errno = EINVAL; return -1; }
    pthread_mutex_lock(&cml_signal_lock);
    for (int i = 0; i < CML_SLOTS; i++) if (cml_slot_fd[i] == write_fd) cml_slot_wants[i][signo] = 0;
    int rc = 0;
    if (cml_saved_valid[signo] && !cml_signal_wanted(signo)) {
        cml_saved_valid[signo] = 0;
        rc = sigaction(signo, &cml_saved[signo], 0);
    }
    pthread_mutex_unlock(&cml_signal_lock);
    return rc;
}

void cml_signal_unforward(int write_fd) {
    pthread_mutex_lock(&cml_signal_lock);
    for (int i = 0; i < CML_SLOTS; i++) {
        if (cml_slot_fd[i] != write_fd) continue;
        cml_slot_fd[i] = -1;  // first: the handler no longer looks at this slot
        for (int s = 1; s < CML_MAX_SIGNAL; s++) {
            if (!cml_slot_wants[i][s]) continue;
            cml_slot_wants[i][s] = 0;
            if (cml_saved_valid[s] && !cml_signal_wanted(s)) {
                cml_saved_valid[s] = 0;
                sigaction(s, &cml_saved[s], 0);
            }
        }
    }
    pthread_mutex_unlock(&cml_signal_lock);
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

/* Serial ports this process made exclusive (TIOCEXCL): cleared at exit too, as a command that
   ends with exit() closes nothing itself and a pty's tty outlives its descriptor. Under a lock:
   links are opened and closed on several threads in a test process. */
#define CML_EXCLUSIVE_MAX 64
static int cml_exclusive_fd[CML_EXCLUSIVE_MAX];
static int cml_exclusive_count;
static pthread_mutex_t cml_exclusive_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t cml_exclusive_once = PTHREAD_ONCE_INIT;

static void cml_exclusive_clear_all(void) {
    pthread_mutex_lock(&cml_exclusive_lock);
    for (int i = 0; i < cml_exclusive_count; i++) ioctl(cml_exclusive_fd[i], TIOCNXCL);
    cml_exclusive_count = 0;
    pthread_mutex_unlock(&cml_exclusive_lock);
}

static void cml_exclusive_register_atexit(void) { atexit(cml_exclusive_clear_all); }

void cml_exclusive_add(int fd) {
    pthread_once(&cml_exclusive_once, cml_exclusive_register_atexit);
    pthread_mutex_lock(&cml_exclusive_lock);
    int known = 0;
    for (int i = 0; i < cml_exclusive_count; i++) if (cml_exclusive_fd[i] == fd) known = 1;
    if (!known && cml_exclusive_count < CML_EXCLUSIVE_MAX) cml_exclusive_fd[cml_exclusive_count++] = fd;
    pthread_mutex_unlock(&cml_exclusive_lock);
}

void cml_exclusive_remove(int fd) {
    pthread_mutex_lock(&cml_exclusive_lock);
    for (int i = 0; i < cml_exclusive_count; i++) {
        if (cml_exclusive_fd[i] != fd) continue;
        cml_exclusive_fd[i] = cml_exclusive_fd[--cml_exclusive_count];
        break;
    }
    pthread_mutex_unlock(&cml_exclusive_lock);
}
