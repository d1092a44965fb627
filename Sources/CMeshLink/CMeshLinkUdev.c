#define _GNU_SOURCE
#include "CMeshLinkUdev.h"

#include <dlfcn.h>
#include <stddef.h>
#include <sys/auxv.h>

// Each libudev function used, as a pointer filled by cml_udev_load().
#define CML_UDEV_FUNCTIONS(X) \
    X(struct udev *, udev_new, (void), ()) \
    X(struct udev *, udev_unref, (struct udev *u), (u)) \
    X(struct udev_enumerate *, udev_enumerate_new, (struct udev *u), (u)) \
    X(struct udev_enumerate *, udev_enumerate_unref, (struct udev_enumerate *e), (e)) \
    X(int, udev_enumerate_add_match_subsystem, (struct udev_enumerate *e, const char *s), (e, s)) \
    X(int, udev_enumerate_scan_devices, (struct udev_enumerate *e), (e)) \
    X(struct udev_list_entry *, udev_enumerate_get_list_entry, (struct udev_enumerate *e), (e)) \
    X(struct udev_list_entry *, udev_list_entry_get_next, (struct udev_list_entry *l), (l)) \
    X(const char *, udev_list_entry_get_name, (struct udev_list_entry *l), (l)) \
    X(struct udev_device *, udev_device_new_from_syspath, (struct udev *u, const char *p), (u, p)) \
    X(struct udev_device *, udev_device_unref, (struct udev_device *d), (d)) \
    X(struct udev_device *, udev_device_get_parent_with_subsystem_devtype, \
      (struct udev_device *d, const char *s, const char *t), (d, s, t)) \
    X(const char *, udev_device_get_sysname, (struct udev_device *d), (d)) \
    X(const char *, udev_device_get_devnode, (struct udev_device *d), (d)) \
    X(const char *, udev_device_get_action, (struct udev_device *d), (d)) \
    X(const char *, udev_device_get_property_value, (struct udev_device *d, const char *k), (d, k)) \
    X(const char *, udev_device_get_sysattr_value, (struct udev_device *d, const char *a), (d, a)) \
    X(struct udev_monitor *, udev_monitor_new_from_netlink, (struct udev *u, const char *n), (u, n)) \
    X(struct udev_monitor *, udev_monitor_unref, (struct udev_monitor *m), (m)) \
    X(int, udev_monitor_filter_add_match_subsystem_devtype, \
      (struct udev_monitor *m, const char *s, const char *t), (m, s, t)) \
    X(int, udev_monitor_enable_receiving, (struct udev_monitor *m), (m)) \
    X(int, udev_monitor_get_fd, (struct udev_monitor *m), (m)) \
    X(struct udev_device *, udev_monitor_receive_device, (struct udev_monitor *m), (m))

#define CML_DECLARE(ret, name, params, args) static ret (*p_##name) params;
CML_UDEV_FUNCTIONS(CML_DECLARE)

static int cml_udev_state = 0;  // 0 not tried, 1 loaded, -1 unavailable

static int cml_udev_load(void) {
    if (cml_udev_state != 0) return cml_udev_state > 0;
    // A static executable (no program interpreter: AT_BASE is 0) loads no library: glibc's dlopen
    // there brings in a second libc and the dynamic loader (about 2 MB more for a daemon on a serial
    // port), and two libcs in one process are fragile. It reads sysfs and the kernel's uevents.
    if (getauxval(AT_BASE) == 0) { cml_udev_state = -1; return 0; }
    void *library = dlopen("libudev.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) { cml_udev_state = -1; return 0; }
    int complete = 1;
#define CML_RESOLVE(ret, name, params, args) \
    p_##name = (ret (*) params)dlsym(library, #name); \
    if (!p_##name) complete = 0;
    CML_UDEV_FUNCTIONS(CML_RESOLVE)
    cml_udev_state = complete ? 1 : -1;
    return complete;
}

int cml_udev_available(void) { return cml_udev_load(); }

struct udev *cml_udev_new(void) { return cml_udev_load() ? p_udev_new() : NULL; }
void cml_udev_unref(struct udev *u) { if (u && cml_udev_load()) p_udev_unref(u); }

struct udev_enumerate *cml_udev_enumerate_new(struct udev *u) { return cml_udev_load() ? p_udev_enumerate_new(u) : NULL; }
void cml_udev_enumerate_unref(struct udev_enumerate *e) { if (e && cml_udev_load()) p_udev_enumerate_unref(e); }
int cml_udev_enumerate_add_match_subsystem(struct udev_enumerate *e, const char *s) {
    return cml_udev_load() ? p_udev_enumerate_add_match_subsystem(e, s) : -1;
}
int cml_udev_enumerate_scan_devices(struct udev_enumerate *e) { return cml_udev_load() ? p_udev_enumerate_scan_devices(e) : -1; }
struct udev_list_entry *cml_udev_enumerate_get_list_entry(struct udev_enumerate *e) {
    return cml_udev_load() ? p_udev_enumerate_get_list_entry(e) : NULL;
}
struct udev_list_entry *cml_udev_list_entry_get_next(struct udev_list_entry *l) {
    return cml_udev_load() ? p_udev_list_entry_get_next(l) : NULL;
}
const char *cml_udev_list_entry_get_name(struct udev_list_entry *l) { return cml_udev_load() ? p_udev_list_entry_get_name(l) : NULL; }

struct udev_device *cml_udev_device_new_from_syspath(struct udev *u, const char *p) {
    return cml_udev_load() ? p_udev_device_new_from_syspath(u, p) : NULL;
}
void cml_udev_device_unref(struct udev_device *d) { if (d && cml_udev_load()) p_udev_device_unref(d); }
struct udev_device *cml_udev_device_get_parent_with_subsystem_devtype(struct udev_device *d, const char *s, const char *t) {
    return cml_udev_load() ? p_udev_device_get_parent_with_subsystem_devtype(d, s, t) : NULL;
}
const char *cml_udev_device_get_sysname(struct udev_device *d) { return cml_udev_load() ? p_udev_device_get_sysname(d) : NULL; }
const char *cml_udev_device_get_devnode(struct udev_device *d) { return cml_udev_load() ? p_udev_device_get_devnode(d) : NULL; }
const char *cml_udev_device_get_action(struct udev_device *d) { return cml_udev_load() ? p_udev_device_get_action(d) : NULL; }
const char *cml_udev_device_get_property_value(struct udev_device *d, const char *k) {
    return cml_udev_load() ? p_udev_device_get_property_value(d, k) : NULL;
}
const char *cml_udev_device_get_sysattr_value(struct udev_device *d, const char *a) {
    return cml_udev_load() ? p_udev_device_get_sysattr_value(d, a) : NULL;
}

struct udev_monitor *cml_udev_monitor_new_from_netlink(struct udev *u, const char *n) {
    return cml_udev_load() ? p_udev_monitor_new_from_netlink(u, n) : NULL;
}
void cml_udev_monitor_unref(struct udev_monitor *m) { if (m && cml_udev_load()) p_udev_monitor_unref(m); }
int cml_udev_monitor_filter_add_match_subsystem_devtype(struct udev_monitor *m, const char *s, const char *t) {
    return cml_udev_load() ? p_udev_monitor_filter_add_match_subsystem_devtype(m, s, t) : -1;
}
int cml_udev_monitor_enable_receiving(struct udev_monitor *m) { return cml_udev_load() ? p_udev_monitor_enable_receiving(m) : -1; }
int cml_udev_monitor_get_fd(struct udev_monitor *m) { return cml_udev_load() ? p_udev_monitor_get_fd(m) : -1; }
struct udev_device *cml_udev_monitor_receive_device(struct udev_monitor *m) {
    return cml_udev_load() ? p_udev_monitor_receive_device(m) : NULL;
}
