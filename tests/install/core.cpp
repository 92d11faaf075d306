// plait's compiled core, compiled once in this project (see plait/core/config.hpp).
#include <plait/src.hpp>
