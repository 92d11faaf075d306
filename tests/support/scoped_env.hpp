// One environment variable set for a scope and put back after it: the test
// cases of one executable share the environment.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace plait_test {

/// Sets (nullptr: unsets) one environment variable for a scope and puts the
/// old value back: the test cases of one executable share the environment.
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
  ~scoped_env() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace plait_test
