// libudev, loaded at run time with dlopen("libudev.so.1"): a binary that runs where libudev is
// missing (static builds, minimal systems) falls back to reading sysfs. Every function returns
// NULL / a negative value when libudev is not available.
#ifndef CMESHLINK_UDEV_H
#define CMESHLINK_UDEV_H

struct udev;
struct udev_enumerate;
struct udev_list_entry;
struct udev_device;
struct udev_monitor;

/// 1 when libudev.so.1 was loaded and has every function used here.
int cml_udev_available(void);

struct udev *cml_udev_new(void);
void cml_udev_unref(struct udev *udev);

struct udev_enumerate *cml_udev_enumerate_new(struct udev *udev);
void cml_udev_enumerate_unref(struct udev_enumerate *enumerate);
int cml_udev_enumerate_add_match_subsystem(struct udev_enumerate *enumerate, const char *subsystem);
int cml_udev_enumerate_scan_devices(struct udev_enumerate *enumerate);
struct udev_list_entry *cml_udev_enumerate_get_list_entry(struct udev_enumerate *enumerate);
struct udev_list_entry *cml_udev_list_entry_get_next(struct udev_list_entry *entry);
const char *cml_udev_list_entry_get_name(struct udev_list_entry *entry);

struct udev_device *cml_udev_device_new_from_syspath(struct udev *udev, const char *syspath);
void cml_udev_device_unref(struct udev_device *device);
struct udev_device *cml_udev_device_get_parent_with_subsystem_devtype(struct udev_device *device,
                                                                      const char *subsystem, const char *devtype);
const char *cml_udev_device_get_sysname(struct udev_device *device);
const char *cml_udev_device_get_devnode(struct udev_device *device);
const char *cml_udev_device_get_action(struct udev_device *device);
const char *cml_udev_device_get_property_value(struct udev_device *device, const char *key);
const char *cml_udev_device_get_sysattr_value(struct udev_device *device, const char *sysattr);

struct udev_monitor *cml_udev_monitor_new_from_netlink(struct udev *udev, const char *name);
void cml_udev_monitor_unref(struct udev_monitor *monitor);
int cml_udev_monitor_filter_add_match_subsystem_devtype(struct udev_monitor *monitor,
                                                        const char *subsystem, const char *devtype);
int cml_udev_monitor_enable_receiving(struct udev_monitor *monitor);
int cml_udev_monitor_get_fd(struct udev_monitor *monitor);
struct udev_device *cml_udev_monitor_receive_device(struct udev_monitor *monitor);

#endif
