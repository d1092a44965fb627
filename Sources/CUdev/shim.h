// Import Glibc's module first so the system headers libudev.h includes stay owned by Glibc.
#pragma clang module import SwiftGlibc
#include <libudev.h>
