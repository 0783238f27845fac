// CInterop is header-only; this file gives SwiftPM a source to compile.
#include "CInterop.h"
