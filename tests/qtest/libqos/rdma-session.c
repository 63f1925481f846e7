#include "qemu/osdep.h"
