// The terminal of an interactive command (the chat): raw mode, and the terminal put back on every
// way out, including a crash (a fatal signal), an exit() and a normal return.
#define _GNU_SOURCE
#include "CMeshLink.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static struct termios cml_term_saved;
static volatile sig_atomic_t cml_term_fd = -1;
static char cml_term_leave[64];
static size_t cml_term_leave_len;
static int cml_term_atexit;

void cml_terminal_restore(void) {
    int fd = cml_term_fd;
    if (fd < 0) return;
    cml_term_fd = -1;
    ssize_t ignored = write(fd, cml_term_leave, cml_term_leave_len);
    (void)ignored;
    tcsetattr(fd, TCSAFLUSH, &cml_term_saved);
}

static void cml_term_fatal(int signo) {
    int saved_errno = errno;
    cml_terminal_restore();
    signal(signo, SIG_DFL);
    errno = saved_errno;
    raise(signo);
}

int cml_terminal_raw(int fd, const char *leave) {
    struct termios t;
    if (tcgetattr(fd, &t) != 0) return -1;
    cml_term_saved = t;
    size_t n = strlen(leave);
    if (n >= sizeof cml_term_leave) n = sizeof cml_term_leave - 1;
    memcpy(cml_term_leave, leave, n);
    cml_term_leave_len = n;
    t.c_iflag &= ~(tcflag_t)(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    t.c_lflag &= ~(tcflag_t)(ECHO | ICANON | IEXTEN | ISIG);
    t.c_cflag |= CS8;
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(fd, TCSAFLUSH, &t) != 0) return -1;
    cml_term_fd = fd;
    if (!cml_term_atexit) { atexit(cml_terminal_restore); cml_term_atexit = 1; }
    static const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGABRT, SIGFPE, SIGQUIT };
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
        struct sigaction a;
        memset(&a, 0, sizeof a);
        a.sa_handler = cml_term_fatal;
        sigemptyset(&a.sa_mask);
        a.sa_flags = SA_RESETHAND | SA_NODEFER;
        sigaction(fatal[i], &a, 0);
    }
    return 0;
}
