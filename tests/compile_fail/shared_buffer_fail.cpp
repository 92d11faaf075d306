// comm.allocate<T>(n) shares T's bytes between processes: a T that is not
// trivially copyable must be refused with a message that says so.
#include <string>

#include <plait/transport/shm/communicator.hpp>

void allocate(plait::shm::communicator& comm) {
  auto fine = comm.allocate<double>(4);
  (void)fine;
// expect-error(non_trivial_element): allocate<T> needs a trivially copyable, trivially destructible T
#if defined(PLAIT_CASE_non_trivial_element)
  auto strings = comm.allocate<std::string>(4);
  (void)strings;
#endif
}

int main() { return 0; }
