#include "datatype.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "pmpi_mpi.hpp"
#include "type_box.hpp"

namespace plait_pmpi {
namespace {

void require(int code, const char* what) {
  if (code != MPI_SUCCESS) throw plait::error(plait::errc::transport, what, {});
}

struct named {
  MPI_Datatype type;
  element_class kind;
};

// The predefined datatypes whose layout and element type are kept once
// read: a handle of one names the same type for the whole run (MPI never
// frees them), while a derived type's handle may be freed and reused, so
// only these are kept.
// MPI_CHAR and MPI_PACKED only move bytes (no reduction takes them).
// The handles are not constants in every MPI (Open MPI: addresses), so the
// table is built at run time, once.
const std::vector<named>& named_types() {
  static const std::vector<named> table = {
      {MPI_BYTE, element_class::byte},
      {MPI_FLOAT, element_class::floating},
      {MPI_DOUBLE, element_class::floating},
      {MPI_INT, element_class::signed_integer},
      {MPI_CHAR, element_class::none},
      {MPI_LONG, element_class::signed_integer},
      {MPI_LONG_LONG, element_class::signed_integer},
      {MPI_UNSIGNED, element_class::unsigned_integer},
      {MPI_SIGNED_CHAR, element_class::signed_integer},
      {MPI_UNSIGNED_CHAR, element_class::unsigned_integer},
      {MPI_SHORT, element_class::signed_integer},
      {MPI_UNSIGNED_SHORT, element_class::unsigned_integer},
      {MPI_UNSIGNED_LONG, element_class::unsigned_integer},
      {MPI_UNSIGNED_LONG_LONG, element_class::unsigned_integer},
      {MPI_INT8_T, element_class::signed_integer},
      {MPI_UINT8_T, element_class::unsigned_integer},
      {MPI_INT16_T, element_class::signed_integer},
      {MPI_UINT16_T, element_class::unsigned_integer},
      {MPI_INT32_T, element_class::signed_integer},
      {MPI_UINT32_T, element_class::unsigned_integer},
      {MPI_INT64_T, element_class::signed_integer},
      {MPI_UINT64_T, element_class::unsigned_integer},
      {MPI_AINT, element_class::signed_integer},
      {MPI_OFFSET, element_class::signed_integer},
      {MPI_COUNT, element_class::signed_integer},
      {MPI_LONG_DOUBLE, element_class::floating},
      {MPI_C_FLOAT_COMPLEX, element_class::complex_floating},
      {MPI_C_DOUBLE_COMPLEX, element_class::complex_floating},
      {MPI_CXX_FLOAT_COMPLEX, element_class::complex_floating},
      {MPI_CXX_DOUBLE_COMPLEX, element_class::complex_floating},
      {MPI_C_LONG_DOUBLE_COMPLEX, element_class::complex_floating},
      {MPI_CXX_LONG_DOUBLE_COMPLEX, element_class::complex_floating},
      {MPI_C_BOOL, element_class::logical},
      {MPI_PACKED, element_class::none},
      {MPI_2INT, element_class::integer_pair},
      {MPI_SHORT_INT, element_class::integer_pair},
      {MPI_LONG_INT, element_class::integer_pair},
      {MPI_FLOAT_INT, element_class::floating_pair},
      {MPI_DOUBLE_INT, element_class::floating_pair},
      {MPI_LONG_DOUBLE_INT, element_class::floating_pair},
      // Fortran's (its bindings hand the library these handles); MPI_LOGICAL
      // is left out: .TRUE. is not 1 in every compiler.
      {MPI_INTEGER, element_class::signed_integer},
      {MPI_INTEGER1, element_class::signed_integer},
      {MPI_INTEGER2, element_class::signed_integer},
      {MPI_INTEGER4, element_class::signed_integer},
      {MPI_INTEGER8, element_class::signed_integer},
      {MPI_REAL, element_class::floating},
      {MPI_REAL4, element_class::floating},
      {MPI_REAL8, element_class::floating},
      {MPI_DOUBLE_PRECISION, element_class::floating},
      {MPI_COMPLEX, element_class::complex_floating},
      {MPI_DOUBLE_COMPLEX, element_class::complex_floating},
      {MPI_COMPLEX8, element_class::complex_floating},
      {MPI_COMPLEX16, element_class::complex_floating},
      {MPI_2INTEGER, element_class::integer_pair},
  };
  return table;
}

/// named_types()' places ordered by handle (MPI_DATATYPE_NULL, which an
/// MPI built without some types uses for them, left out): a derived type,
/// looked up on every call that takes one, is then a binary search's miss
/// instead of a scan of the whole table.
const std::vector<std::pair<MPI_Datatype, int>>& named_by_handle() {
  static const std::vector<std::pair<MPI_Datatype, int>> index = [] {
    std::vector<std::pair<MPI_Datatype, int>> pairs;
    const std::vector<named>& table = named_types();
    for (std::size_t i = 0; i < table.size(); ++i) {
      if (table[i].type != MPI_DATATYPE_NULL) pairs.emplace_back(table[i].type, static_cast<int>(i));
    }
    // Stable: a handle listed twice (an MPI may alias two names) keeps its first place.
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const auto& a, const auto& b) { return std::less<MPI_Datatype>{}(a.first, b.first); });
    return pairs;
  }();
  return index;
}

/// `type`'s place in named_types(), or -1 (a derived type, or one not listed).
int named_index(MPI_Datatype type) noexcept {
  const std::vector<std::pair<MPI_Datatype, int>>& index = named_by_handle();
  const auto at = std::lower_bound(index.begin(), index.end(), type, [](const auto& entry, MPI_Datatype t) {
    return std::less<MPI_Datatype>{}(entry.first, t);
  });
  return at != index.end() && at->first == type ? at->second : -1;
}

/// `type`'s layout and, where it has gaps or is derived, its box. `named`:
/// a predefined type; a derived one's data must also be in order to count
/// as contiguous (an indexed type may swap its blocks within a span of its
/// size), which only its constructors tell.
type_facts read_facts(MPI_Datatype type, bool named) {
  type_facts f;
  type_layout& l = f.layout;
  int size = 0;
  require(PMPI_Type_size(type, &size), "MPI_Type_size");
  MPI_Aint lb = 0;
  MPI_Aint true_extent = 0;
  require(PMPI_Type_get_extent(type, &lb, &l.extent), "MPI_Type_get_extent");
  require(PMPI_Type_get_true_extent(type, &l.true_lb, &true_extent), "MPI_Type_get_true_extent");
  l.size = static_cast<std::size_t>(size);
  // size data bytes spanning exactly size bytes have no holes, and an extent
  // of size makes consecutive elements abut.
  l.contiguous = true_extent == size && l.extent == size;
  if (size > 0 && (!named || !l.contiguous)) f.box = box_of(type);
  if (!named && l.contiguous) l.contiguous = f.box && f.box->one_run() && f.box->run == l.size;
  return f;
}

/// `e`, a reduction's element type, with what element_of adds from the
/// datatype itself.
element_type with_type_facts(element_type e, MPI_Datatype type, const type_layout& l) noexcept {
  e.type = type;
  e.extent = l.extent;
  e.contiguous_bytes = l.contiguous ? static_cast<int>(l.size) : 0;
  e.true_lb = l.true_lb;
  return e;
}

/// A named type's facts and element type (element_of's answer), read the
/// first time any thread asks (the type is valid then: a caller passed it)
/// and kept: a small call would otherwise spend more on the queries than
/// on its data.
struct kept_facts {
  std::atomic<bool> ready{false};
  type_facts facts;
  element_type element;
};

const kept_facts& filled_facts(int index, MPI_Datatype type) {
  static std::vector<kept_facts> kept(named_types().size());
  static std::mutex filling;
  kept_facts& k = kept[static_cast<std::size_t>(index)];
  if (k.ready.load(std::memory_order_acquire)) return k;
  const std::lock_guard<std::mutex> held(filling);
  if (!k.ready.load(std::memory_order_relaxed)) {
    k.facts = read_facts(type, true);
    element_type e;
    const element_class kind = named_types()[static_cast<std::size_t>(index)].kind;
    if (kind != element_class::none) {
      // A pair's size is its value's and an int's.
      const bool pair = kind == element_class::integer_pair || kind == element_class::floating_pair;
      const int size = static_cast<int>(k.facts.layout.size);
      e = {kind, pair ? size - static_cast<int>(sizeof(int)) : size, 1, type, 0, 0, 0};
    }
    k.element = with_type_facts(e, type, k.facts.layout);
    k.ready.store(true, std::memory_order_release);
  }
  return k;
}

/// The kept facts of `type` if it is a named type (one in named_types()),
/// else null. A small MPI_Allreduce asks three times (its size twice, its
/// element), and each search and check cost about 100 instructions: the
/// last answer is kept per thread. A handle's answer never changes: a named
/// type is never freed, so a derived type's handle, reused after
/// MPI_Type_free, names a derived type again.
const kept_facts* named_facts(MPI_Datatype type) {
  struct remembered {
    bool known = false;
    MPI_Datatype type{};  // not MPI_DATATYPE_NULL: no constant in Open MPI, it would add a guard to each look
    const kept_facts* kept = nullptr;
  };
  thread_local remembered last;
  if (last.known && last.type == type) return last.kept;
  const int index = named_index(type);
  const kept_facts* kept = index < 0 ? nullptr : &filled_facts(index, type);
  last = {true, type, kept};
  return kept;
}

// A derived type's facts are kept on the type itself, in an attribute that
// MPI deletes with it (a freed type's handle may name another type next,
// so a table by handle could not be trusted). Set once, under the lock,
// and never replaced: a reader copies them while the caller holds the type.
std::atomic<int> facts_key{MPI_KEYVAL_INVALID};
std::mutex facts_lock;

int delete_facts(MPI_Datatype /*type*/, int /*key*/, void* value, void* /*extra*/) {
  delete static_cast<type_facts*>(value);
  return MPI_SUCCESS;
}

/// The keyval, made at the first use on any thread; MPI_KEYVAL_INVALID if MPI refused.
int the_facts_key() noexcept {
  if (const int known = facts_key.load(std::memory_order_acquire); known != MPI_KEYVAL_INVALID) return known;
  const std::lock_guard<std::mutex> held(facts_lock);
  int key = facts_key.load(std::memory_order_relaxed);
  if (key == MPI_KEYVAL_INVALID &&
      PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, delete_facts, &key, nullptr) == MPI_SUCCESS) {
    facts_key.store(key, std::memory_order_release);
  }
  return facts_key.load(std::memory_order_relaxed);
}

type_facts derived_facts(MPI_Datatype type) {
  const int key = the_facts_key();
  void* value = nullptr;
  int found = 0;
  if (key != MPI_KEYVAL_INVALID && PMPI_Type_get_attr(type, key, &value, &found) == MPI_SUCCESS && found != 0) {
    return *static_cast<const type_facts*>(value);
  }
  type_facts facts = read_facts(type, false);
  if (key == MPI_KEYVAL_INVALID) return facts;
  const std::lock_guard<std::mutex> held(facts_lock);
  if (PMPI_Type_get_attr(type, key, &value, &found) == MPI_SUCCESS && found == 0) {
    auto* kept = new type_facts(facts);
    if (PMPI_Type_set_attr(type, key, kept) != MPI_SUCCESS) delete kept;
  }
  return facts;
}

}  // namespace

type_facts facts_of(MPI_Datatype type) {
  if (const kept_facts* named = named_facts(type)) return named->facts;
  return derived_facts(type);
}

type_layout layout_of(MPI_Datatype type) {
  if (const kept_facts* named = named_facts(type)) return named->facts.layout;
  return derived_facts(type).layout;
}

std::span<const std::byte> gather_bytes(const void* buffer, int count, MPI_Datatype type,
                                        std::vector<std::byte>& scratch) {
  const type_layout l = layout_of(type);
  const std::size_t bytes = l.size * static_cast<std::size_t>(count);
  if (l.contiguous || bytes == 0) return {static_cast<const std::byte*>(buffer) + l.true_lb, bytes};
  // PMPI_Pack on one homogeneous machine writes the data bytes in type-map
  // order, nothing else, in Open MPI and MPICH: exactly what the peers'
  // contiguous receives expect.
  if (bytes > static_cast<std::size_t>(INT_MAX)) throw plait::error(plait::errc::unsupported, "pack over 2 GiB", {});
  scratch.resize(bytes);
  int position = 0;
  require(PMPI_Pack(buffer, count, type, scratch.data(), static_cast<int>(bytes), &position, MPI_COMM_SELF),
          "MPI_Pack");
  return {scratch.data(), bytes};
}

packing_scratch& packing_scratch_of_this_thread() noexcept {
  thread_local packing_scratch scratch;
  return scratch;
}

std::span<std::byte> receive_bytes(void* buffer, int count, MPI_Datatype type, std::vector<std::byte>& scratch) {
  const type_layout l = layout_of(type);
  const std::size_t bytes = l.size * static_cast<std::size_t>(count);
  if (l.contiguous || bytes == 0) return {static_cast<std::byte*>(buffer) + l.true_lb, bytes};
  scratch.resize(bytes);
  return {scratch.data(), bytes};
}

void scatter_bytes(std::span<const std::byte> bytes, void* buffer, int count, MPI_Datatype type) {
  if (bytes.empty()) return;
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    throw plait::error(plait::errc::unsupported, "unpack over 2 GiB", {});
  }
  int position = 0;
  require(PMPI_Unpack(bytes.data(), static_cast<int>(bytes.size()), &position, buffer, count, type, MPI_COMM_SELF),
          "MPI_Unpack");
}

std::uint64_t payload_bytes(long long count, MPI_Datatype type) noexcept {
  if (count <= 0) return 0;
  int size = 0;
  const kept_facts* named = nullptr;
  try {
    named = named_facts(type);
  } catch (...) {
    return 0;
  }
  if (named != nullptr) {
    size = static_cast<int>(named->facts.layout.size);
  } else if (PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0) {
    return 0;
  }
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(size);
}

long long count_sum(const int* counts, int P) noexcept {
  long long total = 0;
  for (int i = 0; i < P; ++i) total += counts[i];
  return total;
}

namespace {

element_type base_element_of(MPI_Datatype type) {
  if (const kept_facts* named = named_facts(type)) return named->element;  // no envelope to read
  int integers = 0;
  int addresses = 0;
  int types = 0;
  int combiner = 0;
  require(PMPI_Type_get_envelope(type, &integers, &addresses, &types, &combiner), "MPI_Type_get_envelope");
  if (combiner == MPI_COMBINER_NAMED) return {};  // a named type not in named_types(): not served
  if ((combiner != MPI_COMBINER_CONTIGUOUS && combiner != MPI_COMBINER_DUP) || types != 1 || integers > 1) return {};
  int count = 1;
  MPI_Datatype base = MPI_DATATYPE_NULL;
  MPI_Aint unused_address = 0;
  require(PMPI_Type_get_contents(type, integers, 0, 1, integers == 1 ? &count : nullptr, &unused_address, &base),
          "MPI_Type_get_contents");
  element_type inner = base_element_of(base);
  // get_contents hands out a new handle for a derived base type.
  int base_integers = 0;
  int base_addresses = 0;
  int base_types = 0;
  int base_combiner = 0;
  require(PMPI_Type_get_envelope(base, &base_integers, &base_addresses, &base_types, &base_combiner),
          "MPI_Type_get_envelope");
  if (base_combiner != MPI_COMBINER_NAMED) PMPI_Type_free(&base);
  if (inner.kind == element_class::none) return {};
  inner.per_item *= count;
  return inner;
}

/// The one predefined element type all of `type`'s data is made of (one
/// element of it, per_item 1), or none: a mix of types, a pair (whose holes
/// only base_element_of's contiguous chains keep right), or a type no
/// reduction takes. Any constructor: vector, subarray, indexed, struct, ...
element_type leaf_element_of(MPI_Datatype type) {  // NOLINT(misc-no-recursion): types nest
  if (const kept_facts* named = named_facts(type)) return is_pair(named->element) ? element_type{} : named->element;
  int integers = 0;
  int addresses = 0;
  int types = 0;
  int combiner = 0;
  require(PMPI_Type_get_envelope(type, &integers, &addresses, &types, &combiner), "MPI_Type_get_envelope");
  if (combiner == MPI_COMBINER_NAMED || types < 1) return {};
  std::vector<int> ints(static_cast<std::size_t>(integers));
  std::vector<MPI_Aint> addrs(static_cast<std::size_t>(addresses));
  std::vector<MPI_Datatype> bases(static_cast<std::size_t>(types));
  require(PMPI_Type_get_contents(type, integers, addresses, types, ints.data(), addrs.data(), bases.data()),
          "MPI_Type_get_contents");
  element_type leaf;
  bool mixed = false;
  for (std::size_t i = 0; i < bases.size(); ++i) {
    if (!mixed) {
      const element_type inner = leaf_element_of(bases[i]);
      if (inner.kind == element_class::none) {
        mixed = true;
      } else if (i == 0) {
        leaf = inner;
      } else if (inner.kind != leaf.kind || inner.width != leaf.width) {
        mixed = true;
      }
    }
    // get_contents hands out a new handle for each derived base type.
    int base_integers = 0;
    int base_addresses = 0;
    int base_types = 0;
    int base_combiner = 0;
    if (PMPI_Type_get_envelope(bases[i], &base_integers, &base_addresses, &base_types, &base_combiner) == MPI_SUCCESS &&
        base_combiner != MPI_COMBINER_NAMED) {
      PMPI_Type_free(&bases[i]);
    }
  }
  return mixed ? element_type{} : leaf;
}

}  // namespace

element_type element_of(MPI_Datatype type) {
  if (const kept_facts* named = named_facts(type)) return named->element;
  element_type e = base_element_of(type);
  const type_layout l = derived_facts(type).layout;
  if (e.kind == element_class::none) {
    // Any other derived type of one predefined type: its elements are the
    // same values whatever its gaps (the reductions pack a type with gaps:
    // reduction_buffers.hpp).
    e = leaf_element_of(type);
    if (e.kind == element_class::none || e.width <= 0 || l.size % static_cast<std::size_t>(e.width) != 0) return {};
    e.per_item = static_cast<int>(l.size / static_cast<std::size_t>(e.width));
  }
  return with_type_facts(e, type, l);
}

}  // namespace plait_pmpi
