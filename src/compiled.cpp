// plait::compiled: the compiled core as a static library, for projects that
// prefer compiling plait's non-template code once (see plait/core/config.hpp).
#include "plait/src.hpp"
