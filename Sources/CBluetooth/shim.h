// Import Glibc's module first: its include guards then turn the textual <sys/socket.h> etc. that
// the BlueZ headers include into no-ops, so the socket API stays owned by Glibc alone (otherwise
// names like SOCK_CLOEXEC can vanish from files that import only Glibc, depending on build order).
#pragma clang module import SwiftGlibc
#include <bluetooth/bluetooth.h>
#include <bluetooth/l2cap.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
