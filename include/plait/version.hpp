// plait's version, for code that must adapt to the library it is compiled
// against. The CMake build checks at configure time that these numbers agree
// with project(VERSION), so a release cannot ship with stale macros.
#pragma once

/// Major version: bumped on incompatible changes (with a new inline namespace).
#define PLAIT_VERSION_MAJOR 0
/// Minor version: bumped when features are added compatibly.
#define PLAIT_VERSION_MINOR 2
/// Patch version: bumped for fixes only.
#define PLAIT_VERSION_PATCH 0

/// The version as one comparable integer: major * 10000 + minor * 100 + patch.
#define PLAIT_VERSION (PLAIT_VERSION_MAJOR * 10000 + PLAIT_VERSION_MINOR * 100 + PLAIT_VERSION_PATCH)
