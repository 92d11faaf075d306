// How plait's non-template code is compiled: header-only (the default), or
// once, in the compiled core.
//
// Header-only, every translation unit that calls a collective compiles the
// shared-memory transport, the executor and the automatic choice again (about
// 3 s at -O2 with g++ 12). A project with many such files can compile that
// code once instead, as Asio's ASIO_SEPARATE_COMPILATION does:
//
//   - define PLAIT_SEPARATE_COMPILATION for every file that includes plait,
//   - and #include <plait/src.hpp> in exactly one of them,
//
// or, with CMake, link plait::compiled instead of plait::plait. Then the
// headers declare what the core defines, and the common template instances
// (the executor, check mode and remembered schedules for the shm transport)
// are declared `extern template`: user files instantiate only what their own
// types need. Both ways run the same code.
#pragma once

#if defined(PLAIT_SEPARATE_COMPILATION)
/// Declares (or, in <plait/src.hpp>, defines) a function of the compiled core.
#define PLAIT_DECL
#else
/// Declares and defines an inline function of the header-only library.
#define PLAIT_DECL inline
#endif

#if defined(PLAIT_SEPARATE_COMPILATION) && !defined(PLAIT_COMPILING_CORE)
/// Starts the declaration of a template instance that the compiled core
/// instantiates once: `extern` in users' files, empty in <plait/src.hpp>.
#define PLAIT_EXTERN_TEMPLATE extern template
#else
#define PLAIT_EXTERN_TEMPLATE template
#endif
