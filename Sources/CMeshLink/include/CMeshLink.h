// Small C helpers for MeshLink: things that need _GNU_SOURCE or must be async-signal-safe.
#ifndef CMESHLINK_H
#define CMESHLINK_H

#include <stdint.h>

#include "CMeshLinkUdev.h"

/// pipe2(O_CLOEXEC | O_NONBLOCK). Returns 0 or -1 with errno set.
int cml_pipe_nonblocking(int fds[2]);

/// Installs a handler for `signo` that writes the signal number (one byte) to `write_fd`, and to
/// every other pipe that asked for `signo` (each poll loop of the process has its own pipe, and
/// receives only the signals it asked for; at most 32 pipes). Also unblocks `signo` for the
/// calling thread. Returns 0 or -1 with errno set.
int cml_signal_forward(int signo, int write_fd);

/// `write_fd` no longer asks for `signo`; once no pipe does, the disposition that was active
/// before the first cml_signal_forward(signo, ...) is restored.
int cml_signal_restore(int signo, int write_fd);
/// Stops writing any signal to `write_fd` (restoring dispositions no other pipe asks for): call
/// before closing it.
void cml_signal_unforward(int write_fd);

/// Serial port descriptors this process made exclusive (TIOCEXCL): TIOCNXCL is done on each still
/// listed at exit. Thread-safe; at most 64.
void cml_exclusive_add(int fd);
void cml_exclusive_remove(int fd);

/// prctl(PR_SET_CHILD_SUBREAPER, 1): orphaned descendants are re-parented to this process, so it
/// can wait for all of them. Returns 0 or -1 with errno set.
int cml_set_child_subreaper(void);

/// POLLRDHUP (Linux): the peer closed its writing half.
short cml_pollrdhup(void);

/// A non-blocking NETLINK_KOBJECT_UEVENT socket bound to the kernel event group, or -1 with errno.
int cml_uevent_socket(void);

/// Socket flag values, read from the C headers. Swift does not always see these glibc enum
/// constants (whether it does depends on which module first includes <sys/socket.h>), so MeshLink
/// and the daemon take them from here.
int cml_msg_nosignal(void);
int cml_msg_dontwait(void);
int cml_sock_cloexec(void);
int cml_sock_nonblock(void);

/// Puts the terminal on `fd` in raw mode (no echo, no line buffering, no signals from keys) and
/// makes sure it is put back, with `leave` (at most 63 bytes, e.g. leaving the alternate screen)
/// written first, on cml_terminal_restore(), at exit() and on a fatal signal (which then goes on
/// to its default action). Returns 0 or -1 with errno set.
int cml_terminal_raw(int fd, const char *leave);

/// Puts the terminal back as cml_terminal_raw found it (once; later calls do nothing).
void cml_terminal_restore(void);

#endif
