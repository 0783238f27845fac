// The shims are header-only (CInterop.h); arena.c holds the bump arena.
#include "CInterop.h"
