// cma-vs-copy: is the kernel's cross-memory copy (process_vm_readv) the
// fastest way to move a large user buffer between two processes, or does a
// pipelined copy-in/copy-out through a small shared ring, with streaming
// (non-temporal) stores, beat it? A standalone experiment (issue 8), not a
// test: it forks two ranks sharing one anonymous mapping and times 2-rank
// all-gathers and all-to-alls of plain private buffers, several ways:
//
//   memcpy            the ceiling: both ranks copy size/2 bytes between private
//                     buffers at once (what plait-bench's memcpy row does)
//   cma[:P]           own block by memcpy, the peer's with process_vm_readv
//                     straight into the result (P: in calls of P bytes each)
//   cmaiov:P          the same in one call with iovecs of P bytes
//   pipe:C:D:XY       own block by memcpy; the peer's through a ring of D
//                     chunks of C bytes per direction: the sender copies chunk k
//                     in while the receiver copies chunk k-1 out. X: the stores
//                     into the ring, Y: the stores into the result; r regular
//                     (memcpy), n streaming (plait::detail::stream_copy)
//   split:F:C:D:XY    a fraction F of the peer's block by process_vm_readv, the
//                     rest through the ring, interleaved chunk by chunk
//   ntlocal           a suffix (e.g. cma+ntlocal): the own block is copied with
//                     streaming stores too (memcpy+ntlocal: the ceiling's copy)
//   cmatee:C          all-gather: the peer's block by process_vm_readv in pieces
//                     of C bytes, each piece then written on into the peer's own
//                     slot with process_vm_writev (the peer skips its local copy)
//
// And with buffers both ranks map (what comm.allocate gives), every copy
// streamed, one barrier per call (the signal either direction needs):
//   shpull            own block copied locally, the peer's read from its buffer
//   shpush            own block copied locally and written into the peer's result
//   shfused:C         all-gather: the own block written into both results, a
//                     piece of C bytes at a time (read once)
//   shtee:C           all-gather: the peer's block read once, a piece at a time,
//                     and written into both results (the peer skips its local
//                     copy): what plait's isend_with_copy does
//
// Samples: barrier, `iters` calls, barrier; the time is rank 0's (the closing
// barrier waits for both). Variants are interleaved, in a new random order
// every round (a fixed rotation keeps each variant after the same other one,
// and a variant that runs after one which left the caches full of dirty lines
// pays for their write-back: up to 1.4x between identical variants), and
// before each sample every rank reads `--scrub` bytes of a private buffer, so
// those write-backs happen untimed. On a shared machine a rank that is preempted stalls its peer, so
// each sample records both ranks' involuntary context switches (getrusage) and
// the median is taken over the clean samples only (over all when none is
// clean; the table says how many were). Printed as busbw in GB/s as
// plait-bench computes it (size = the gathered buffer or one rank's send
// buffer, busbw = size/time x (P-1)/P), with the ratio to `cma`.
//
// Usage: cma-vs-copy [--sizes 4M,16M,64M] [--reps 9] [--op all_gather,all_to_all,all_gather_in_place]
//                    [--variants memcpy,cma,pipe:256K:4:rn,shtee:64K,...] [--hugepages] [--fresh]
//                    [--no-pin] [--scrub 64M]
//   --hugepages  madvise(MADV_HUGEPAGE) on the send and result buffers
//   --fresh      map a new, untouched result buffer for every call (first-touch
//                faults inside the timing) instead of reusing a warm one
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "plait/core/backoff.hpp"
#include "plait/core/stream_copy.hpp"

namespace {

using plait::detail::stream_copy;
using plait::detail::stream_fence;

constexpr std::size_t max_ring_bytes = std::size_t{16} << 20;  // per direction

struct alignas(64) line_counter {
  std::atomic<std::uint64_t> value{0};
};

struct control {
  line_counter arrived;       // barrier
  line_counter generation;    // barrier
  line_counter head[2];       // chunks written into ring[r] by rank r
  line_counter tail[2];       // chunks of ring[r] consumed by the peer
  line_counter failed;        // a rank saw wrong bytes or a failed call
  line_counter preempted[2];  // involuntary context switches in the last sample
  pid_t pid[2];
  std::uintptr_t send_address[2];  // each rank's send buffer, for process_vm_readv
  std::uintptr_t recv_address[2];  // each rank's result, for process_vm_writev (cmatee)
  alignas(64) unsigned char ring[2][max_ring_bytes];
};

void spin_pause() { plait::detail::cpu_relax(); }

long involuntary_switches() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_nivcsw;
}

void barrier(control& c) {
  const std::uint64_t gen = c.generation.value.load(std::memory_order_acquire);
  if (c.arrived.value.fetch_add(1, std::memory_order_acq_rel) == 1) {
    c.arrived.value.store(0, std::memory_order_relaxed);
    c.generation.value.store(gen + 1, std::memory_order_release);
    return;
  }
  for (unsigned i = 0; c.generation.value.load(std::memory_order_acquire) == gen; ++i) {
    spin_pause();
    if ((i & 0xffff) == 0xffff) sched_yield();
  }
}

std::size_t parse_size(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  return static_cast<std::size_t>(v);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

struct variant {
  std::string name;
  enum kind_t {
    memcpy_ceiling,
    cma,
    cmaiov,
    pipe,
    split_path,
    shared_pull,
    shared_push,
    shared_fused,
    shared_tee,
    cma_tee
  } kind = cma;
  std::size_t piece = 0;  // cma: bytes per call (0: one call)
  std::size_t chunk = 0, depth = 0;
  bool nt_in = false, nt_out = false, nt_local = false;
  double cma_fraction = 0;
  bool shared() const {
    return kind == shared_pull || kind == shared_push || kind == shared_fused || kind == shared_tee;
  }
};

variant parse_variant(const std::string& text) {
  variant v;
  v.name = text;
  std::string spec = text;
  if (const auto plus = spec.find("+ntlocal"); plus != std::string::npos) {
    v.nt_local = true;
    spec = spec.substr(0, plus);
  }
  const auto f = split(spec, ':');
  auto stores = [&](const std::string& xy) {
    if (xy.size() != 2) throw std::runtime_error("stores must be two of r/n: " + text);
    v.nt_in = xy[0] == 'n';
    v.nt_out = xy[1] == 'n';
  };
  if (f[0] == "memcpy") {
    v.kind = variant::memcpy_ceiling;
  } else if (f[0] == "cma") {
    v.kind = variant::cma;
    if (f.size() > 1) v.piece = parse_size(f[1]);
  } else if (f[0] == "cmaiov" && f.size() == 2) {
    v.kind = variant::cmaiov;
    v.piece = parse_size(f[1]);
  } else if (f[0] == "pipe" && f.size() == 4) {
    v.kind = variant::pipe;
    v.chunk = parse_size(f[1]);
    v.depth = std::stoul(f[2]);
    stores(f[3]);
  } else if (f[0] == "shpull") {
    v.kind = variant::shared_pull;
  } else if (f[0] == "shpush") {
    v.kind = variant::shared_push;
  } else if (f[0] == "shfused" && f.size() == 2) {
    v.kind = variant::shared_fused;
    v.chunk = parse_size(f[1]);
  } else if (f[0] == "cmatee" && f.size() == 2) {
    v.kind = variant::cma_tee;
    v.chunk = parse_size(f[1]);
  } else if (f[0] == "shtee" && f.size() == 2) {
    v.kind = variant::shared_tee;
    v.chunk = parse_size(f[1]);
  } else if (f[0] == "split" && f.size() == 5) {
    v.kind = variant::split_path;
    v.cma_fraction = std::stod(f[1]);
    v.chunk = parse_size(f[2]);
    v.depth = std::stoul(f[3]);
    stores(f[4]);
  } else {
    throw std::runtime_error("unknown variant " + text);
  }
  if ((v.kind == variant::pipe || v.kind == variant::split_path) &&
      (v.chunk == 0 || v.depth == 0 || v.chunk * v.depth > max_ring_bytes || v.chunk % 64 != 0))
    throw std::runtime_error("ring too large or chunk not a multiple of 64: " + text);
  return v;
}

struct options {
  std::vector<std::size_t> sizes{std::size_t{4} << 20, std::size_t{16} << 20, std::size_t{64} << 20};
  std::vector<std::string> ops{"all_gather", "all_to_all"};
  std::vector<std::string> variants{"memcpy", "cma", "pipe:256K:4:rn", "pipe:256K:4:rr"};
  int reps = 9;
  bool hugepages = false, fresh = false, pin = true;
  std::size_t scrub = std::size_t{64} << 20;
};

void* map_private(std::size_t bytes, bool hugepages) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(2);
  }
  if (hugepages) madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

// One rank's buffers for one size. Block b of rank r: all-gather's send is one
// block (index r in the result); all-to-all's send has two, block d goes to rank d.
struct buffers {
  std::size_t block = 0;
  unsigned char* send = nullptr;     // all-gather: block bytes; all-to-all: 2 blocks
  unsigned char* recv = nullptr;     // 2 blocks
  unsigned char* scratch = nullptr;  // memcpy ceiling's destination (block bytes)
  std::size_t send_bytes = 0;
};

unsigned char pattern(int rank, int dest, std::size_t i) {
  return static_cast<unsigned char>(
      (i * 131 + static_cast<std::size_t>(rank) * 17 + static_cast<std::size_t>(dest) * 7) >> 3);
}

// Moves the peer's block (peer_src: its address in the peer, `bytes` long) into dst.
struct mover {
  control& c;
  int rank;
  int peer;

  bool cma_read(unsigned char* dst, std::uintptr_t remote, std::size_t bytes, std::size_t piece) const {
    if (piece == 0) piece = bytes;
    for (std::size_t done = 0; done < bytes;) {
      const std::size_t n = std::min(piece, bytes - done);
      iovec local{dst + done, n};
      iovec far{reinterpret_cast<void*>(remote + done), n};
      const ssize_t got = process_vm_readv(c.pid[peer], &local, 1, &far, 1, 0);
      if (got <= 0) return false;
      done += static_cast<std::size_t>(got);
    }
    return true;
  }

  bool cma_iov(unsigned char* dst, std::uintptr_t remote, std::size_t bytes, std::size_t piece) const {
    std::vector<iovec> local, far;
    for (std::size_t done = 0; done < bytes; done += piece) {
      const std::size_t n = std::min(piece, bytes - done);
      local.push_back({dst + done, n});
      far.push_back({reinterpret_cast<void*>(remote + done), n});
    }
    for (std::size_t i = 0; i < local.size(); i += 1024) {  // IOV_MAX
      const std::size_t k = std::min<std::size_t>(1024, local.size() - i);
      if (process_vm_readv(c.pid[peer], local.data() + i, k, far.data() + i, k, 0) <= 0) return false;
    }
    return true;
  }

  // Sends `src` (to the peer) through ring[rank] while receiving the peer's
  // ring[peer] into `dst`; both `bytes` long. Meanwhile, every ring step, reads
  // cma_bytes from the peer (at remote) with process_vm_readv into cma_dst.
  bool pipe(const unsigned char* src, unsigned char* dst, std::size_t bytes, std::size_t chunk, std::size_t depth,
            bool nt_in, bool nt_out, unsigned char* cma_dst, std::uintptr_t remote, std::size_t cma_bytes) const {
    const std::uint64_t chunks = (bytes + chunk - 1) / chunk;
    // Counters only grow: each call starts from where the last one ended.
    const std::uint64_t send_base = c.head[rank].value.load(std::memory_order_relaxed);
    const std::uint64_t recv_base = c.tail[peer].value.load(std::memory_order_relaxed);
    std::uint64_t sent = 0, received = 0;
    const std::size_t cma_piece =
        cma_bytes == 0 ? 0 : std::max<std::size_t>(64 << 10, cma_bytes / std::max<std::uint64_t>(chunks, 1));
    std::size_t cma_done = 0;
    unsigned spins = 0;
    while (sent < chunks || received < chunks || cma_done < cma_bytes) {
      bool progress = false;
      if (sent < chunks && send_base + sent - c.tail[rank].value.load(std::memory_order_acquire) < depth) {
        const std::size_t off = sent * chunk, n = std::min(chunk, bytes - off);
        unsigned char* slot = c.ring[rank] + ((send_base + sent) % depth) * chunk;
        if (nt_in) {
          stream_copy(slot, src + off, n);
          stream_fence();
        } else {
          std::memcpy(slot, src + off, n);
        }
        ++sent;
        c.head[rank].value.store(send_base + sent, std::memory_order_release);
        progress = true;
      }
      if (received < chunks && c.head[peer].value.load(std::memory_order_acquire) > recv_base + received) {
        const std::size_t off = received * chunk, n = std::min(chunk, bytes - off);
        const unsigned char* slot = c.ring[peer] + ((recv_base + received) % depth) * chunk;
        if (nt_out) {
          stream_copy(dst + off, slot, n);
        } else {
          std::memcpy(dst + off, slot, n);
        }
        ++received;
        c.tail[peer].value.store(recv_base + received, std::memory_order_release);
        progress = true;
      }
      if (cma_done < cma_bytes) {
        const std::size_t n = std::min(cma_piece, cma_bytes - cma_done);
        if (!cma_read(cma_dst + cma_done, remote + cma_done, n, 0)) return false;
        cma_done += n;
        progress = true;
      }
      if (!progress) {
        spin_pause();
        if ((++spins & 0xffff) == 0) sched_yield();
      }
    }
    if (nt_out) stream_fence();
    return true;
  }
};

// Reads `bytes` of a private buffer, so that the dirty lines the previous
// sample left in the caches are written back now, untimed, and not during the
// next sample (which would charge one variant for another's stores).
void scrub_caches(const unsigned char* buffer, std::size_t bytes) {
  if (buffer == nullptr) return;
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < bytes; i += 64) sum += buffer[i];
  asm volatile("" : : "r"(sum) : "memory");
}

struct result_row {
  std::string op, variant;
  std::size_t size;
  double median_s;   // over the samples in which neither rank was preempted (all, if none was clean)
  int clean, total;  // samples without a preemption on either rank, samples
};

// Buffers both ranks map (what comm.allocate gives): rank r's send and result.
struct shared_region {
  unsigned char* base = nullptr;
  std::size_t send_capacity = 0, recv_capacity = 0;
  unsigned char* send(int r) const { return base + static_cast<std::size_t>(r) * (send_capacity + recv_capacity); }
  unsigned char* recv(int r) const { return send(r) + send_capacity; }
};

void run_rank(int rank, control& c, const options& opt, const shared_region& sh, std::vector<result_row>* out) {
  const int peer = 1 - rank;
  if (opt.pin) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(rank, &set);
    sched_setaffinity(0, sizeof set, &set);
  }
  mover mv{c, rank, peer};
  unsigned char* scrub_buffer = opt.scrub == 0 ? nullptr : static_cast<unsigned char*>(map_private(opt.scrub, false));
  if (scrub_buffer != nullptr) std::memset(scrub_buffer, 1, opt.scrub);
  std::vector<variant> variants;
  for (const auto& v : opt.variants) variants.push_back(parse_variant(v));

  for (const std::string& op : opt.ops) {
    const bool gather = op != "all_to_all";
    const bool in_place = op == "all_gather_in_place";  // the own shard is already in place: no local copy
    for (const std::size_t size : opt.sizes) {
      // size: the gathered buffer (all-gather) or one rank's send buffer (all-to-all): 2 blocks either way.
      buffers b;
      b.block = size / 2;
      b.send_bytes = gather ? b.block : 2 * b.block;
      b.send = static_cast<unsigned char*>(map_private(b.send_bytes, opt.hugepages));
      b.recv = static_cast<unsigned char*>(map_private(2 * b.block, opt.hugepages));
      b.scratch = static_cast<unsigned char*>(map_private(b.block, opt.hugepages));
      for (std::size_t i = 0; i < b.send_bytes; ++i) {
        const int dest = gather ? peer : static_cast<int>(i / b.block);
        b.send[i] = pattern(rank, dest, i % b.block);
      }
      std::memcpy(sh.send(rank), b.send, b.send_bytes);
      std::memset(b.recv, 0, 2 * b.block);
      std::memset(sh.recv(rank), 0, 2 * b.block);
      std::memset(b.scratch, 0, b.block);
      c.send_address[rank] = reinterpret_cast<std::uintptr_t>(b.send);
      c.recv_address[rank] = reinterpret_cast<std::uintptr_t>(b.recv);
      barrier(c);

      // This rank's own block (stays) and where the peer's block lives over there.
      const unsigned char* own = gather ? b.send : b.send + static_cast<std::size_t>(rank) * b.block;
      unsigned char* own_dst = b.recv + static_cast<std::size_t>(rank) * b.block;
      const std::uintptr_t remote = c.send_address[peer] + (gather ? 0 : static_cast<std::size_t>(rank) * b.block);
      unsigned char* peer_dst_base = b.recv + static_cast<std::size_t>(peer) * b.block;
      const unsigned char* to_peer = gather ? b.send : b.send + static_cast<std::size_t>(peer) * b.block;

      const int iters = size <= (std::size_t{4} << 20) ? 4 : size <= (std::size_t{16} << 20) ? 2 : 1;
      auto call = [&](const variant& v, unsigned char* recv) -> bool {
        unsigned char* peer_dst = recv + static_cast<std::size_t>(peer) * b.block;
        unsigned char* own_to = recv + static_cast<std::size_t>(rank) * b.block;
        if (v.kind == variant::memcpy_ceiling) {
          if (v.nt_local) {
            stream_copy(b.scratch, own, b.block);
            stream_fence();
          } else {
            std::memcpy(b.scratch, own, b.block);
          }
          return true;
        }
        if (v.shared()) {
          // Every copy streams, as plait's copies out of and into comm.allocate buffers do at these sizes.
          const unsigned char* own_sh = sh.send(rank) + (own - b.send);
          const unsigned char* to_peer_sh = sh.send(rank) + (to_peer - b.send);
          unsigned char* own_to_sh = sh.recv(rank) + static_cast<std::size_t>(rank) * b.block;
          // Where this rank's block lands in the peer's result (push), and where the peer's block is (pull).
          unsigned char* at_peer = sh.recv(peer) + static_cast<std::size_t>(rank) * b.block;
          const unsigned char* from_peer = sh.send(peer) + (gather ? 0 : static_cast<std::size_t>(rank) * b.block);
          if (in_place) own_sh = own_to_sh;
          if (v.kind == variant::shared_tee && gather && !in_place) {
            // Pull the peer's block once, write it into this rank's result and
            // into the peer's own slot (the peer's local copy, done here).
            unsigned char* mine = sh.recv(rank) + static_cast<std::size_t>(peer) * b.block;
            unsigned char* theirs = sh.recv(peer) + static_cast<std::size_t>(peer) * b.block;
            for (std::size_t off = 0; off < b.block; off += v.chunk) {
              const std::size_t n = std::min(v.chunk, b.block - off);
              stream_copy(mine + off, from_peer + off, n);
              stream_copy(theirs + off, from_peer + off, n);
            }
          } else if (v.kind == variant::shared_fused && gather) {
            for (std::size_t off = 0; off < b.block; off += v.chunk) {
              const std::size_t n = std::min(v.chunk, b.block - off);
              if (!in_place) stream_copy(own_to_sh + off, own_sh + off, n);
              stream_copy(at_peer + off, own_sh + off, n);
            }
          } else {
            if (!in_place) stream_copy(own_to_sh, own_sh, b.block);
            if (v.kind == variant::shared_pull)
              stream_copy(sh.recv(rank) + static_cast<std::size_t>(peer) * b.block, from_peer, b.block);
            else
              stream_copy(at_peer, in_place ? own_sh : to_peer_sh, b.block);
          }
          stream_fence();
          barrier(c);  // the one signal a call needs either way: data read (pull) or arrived (push)
          return true;
        }
        if (v.kind == variant::cma_tee && gather && !in_place) {
          // The peer's block by process_vm_readv into this rank's result, a
          // piece at a time, each piece then written on into the peer's own
          // slot with process_vm_writev (the peer's local copy, done here).
          const std::uintptr_t theirs = c.recv_address[peer] + static_cast<std::size_t>(peer) * b.block;
          for (std::size_t off = 0; off < b.block; off += v.chunk) {
            const std::size_t n = std::min(v.chunk, b.block - off);
            if (!mv.cma_read(peer_dst + off, remote + off, n, 0)) return false;
            iovec local{peer_dst + off, n};
            iovec far{reinterpret_cast<void*>(theirs + off), n};
            if (process_vm_writev(c.pid[peer], &local, 1, &far, 1, 0) != static_cast<ssize_t>(n)) return false;
          }
          barrier(c);  // the peer's own slot is written before its call ends
          return true;
        }
        if (in_place) {
        } else if (v.nt_local) {
          stream_copy(own_to, own, b.block);
          stream_fence();
        } else {
          std::memcpy(own_to, own, b.block);
        }
        switch (v.kind) {
          case variant::cma: return mv.cma_read(peer_dst, remote, b.block, v.piece);
          case variant::cmaiov: return mv.cma_iov(peer_dst, remote, b.block, v.piece);
          case variant::pipe:
            return mv.pipe(to_peer, peer_dst, b.block, v.chunk, v.depth, v.nt_in, v.nt_out, nullptr, 0, 0);
          case variant::split_path: {
            // The first cma_bytes of the block by process_vm_readv, the rest through the ring.
            const std::size_t cma_bytes =
                static_cast<std::size_t>(v.cma_fraction * static_cast<double>(b.block)) / 4096 * 4096;
            return mv.pipe(to_peer + cma_bytes, peer_dst + cma_bytes, b.block - cma_bytes, v.chunk, v.depth, v.nt_in,
                           v.nt_out, peer_dst, remote, cma_bytes);
          }
          default: return false;
        }
      };
      auto check = [&](const variant& v, const unsigned char* recv) {
        if (v.kind == variant::memcpy_ceiling) return true;
        if (v.shared()) recv = sh.recv(rank);
        for (std::size_t i = 0; i < b.block; ++i) {
          if (recv[static_cast<std::size_t>(peer) * b.block + i] != pattern(peer, rank, i)) return false;
          if (!in_place && recv[static_cast<std::size_t>(rank) * b.block + i] != pattern(rank, gather ? peer : rank, i))
            return false;
        }
        return true;
      };
      (void)own_dst;
      (void)peer_dst_base;

      // Warm-up and verification, once per variant.
      for (const variant& v : variants) {
        std::memset(b.recv, 0, 2 * b.block);
        if (in_place) {  // the own block already sits in the result
          std::memcpy(b.recv + static_cast<std::size_t>(rank) * b.block, own, b.block);
          std::memcpy(sh.recv(rank) + static_cast<std::size_t>(rank) * b.block, own, b.block);
          std::memset(sh.recv(rank) + static_cast<std::size_t>(peer) * b.block, 0, b.block);
        } else {
          std::memset(sh.recv(rank), 0, 2 * b.block);
        }
        barrier(c);
        bool ok = call(v, b.recv);
        barrier(c);
        ok = ok && check(v, b.recv);
        if (!ok) c.failed.value.store(1);
        barrier(c);
        if (c.failed.value.load() != 0) {
          if (rank == 0) std::fprintf(stderr, "FAILED: %s %s at %zu bytes\n", op.c_str(), v.name.c_str(), size);
          std::exit(1);
        }
      }

      std::vector<std::vector<double>> samples(variants.size()), clean(variants.size());
      std::vector<std::size_t> order(variants.size());
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::mt19937 shuffle_order(static_cast<unsigned>(size));  // the same on both ranks
      for (int round = 0; round < opt.reps; ++round) {
        std::shuffle(order.begin(), order.end(), shuffle_order);
        for (const std::size_t vi : order) {
          const variant& v = variants[vi];
          scrub_caches(scrub_buffer, opt.scrub);
          std::vector<unsigned char*> fresh;
          if (opt.fresh)
            for (int i = 0; i < iters; ++i)
              fresh.push_back(static_cast<unsigned char*>(map_private(2 * b.block, opt.hugepages)));
          barrier(c);
          const long switches = involuntary_switches();
          const auto t0 = std::chrono::steady_clock::now();
          bool ok = true;
          for (int i = 0; i < iters; ++i) ok = call(v, opt.fresh ? fresh[static_cast<std::size_t>(i)] : b.recv) && ok;
          barrier(c);
          const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
          c.preempted[rank].value.store(static_cast<std::uint64_t>(involuntary_switches() - switches));
          if (!ok) c.failed.value.store(1);
          for (unsigned char* p : fresh) munmap(p, 2 * b.block);
          barrier(c);
          samples[vi].push_back(t);
          if (c.preempted[0].value.load() == 0 && c.preempted[1].value.load() == 0) clean[vi].push_back(t);
        }
      }
      if (rank == 0) {
        for (std::size_t vi = 0; vi < variants.size(); ++vi) {
          auto s = clean[vi].empty() ? samples[vi] : clean[vi];
          std::sort(s.begin(), s.end());
          out->push_back({op, variants[vi].name, size, s[s.size() / 2], static_cast<int>(clean[vi].size()),
                          static_cast<int>(samples[vi].size())});
        }
      }
      munmap(b.send, b.send_bytes);
      munmap(b.recv, 2 * b.block);
      munmap(b.scratch, b.block);
      barrier(c);
    }
  }
  if (c.failed.value.load() != 0) std::exit(1);
}

std::string size_text(std::size_t s) {
  if (s >= (std::size_t{1} << 20)) return std::to_string(s >> 20) + " MiB";
  return std::to_string(s >> 10) + " KiB";
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
        return argv[++i];
      };
      if (a == "--sizes") {
        opt.sizes.clear();
        for (const auto& s : split(next(), ',')) opt.sizes.push_back(parse_size(s) / 128 * 128);
      } else if (a == "--reps") {
        opt.reps = std::stoi(next());
      } else if (a == "--op") {
        opt.ops = split(next(), ',');
      } else if (a == "--variants") {
        opt.variants = split(next(), ',');
      } else if (a == "--hugepages") {
        opt.hugepages = true;
      } else if (a == "--fresh") {
        opt.fresh = true;
      } else if (a == "--scrub") {
        opt.scrub = parse_size(next());
      } else if (a == "--no-pin") {
        opt.pin = false;
      } else {
        std::fprintf(
            stderr,
            "usage: cma-vs-copy [--sizes 4M,16M,64M] [--reps N] [--op all_gather,all_to_all,all_gather_in_place]\n"
            "                   [--variants memcpy,cma,cma:1M,cmaiov:1M,pipe:C:D:XY,split:F:C:D:XY[+ntlocal],\n"
            "                               cmatee:C,shpull,shpush,shfused:C,shtee:C]\n"
            "                   [--hugepages] [--fresh] [--no-pin] [--scrub 64M]\n");
        return 2;
      }
    }
    for (const auto& v : opt.variants) parse_variant(v);
    for (const auto& op : opt.ops)
      if (op != "all_gather" && op != "all_to_all" && op != "all_gather_in_place")
        throw std::runtime_error("unknown op " + op);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cma-vs-copy: %s\n", e.what());
    return 2;
  }

  void* mem = mmap(nullptr, sizeof(control), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("mmap");
    return 2;
  }
  auto* c = new (mem) control{};
  shared_region sh;
  for (const std::size_t s : opt.sizes) {
    sh.send_capacity = std::max(sh.send_capacity, s);
    sh.recv_capacity = std::max(sh.recv_capacity, s);
  }
  if (void* m = mmap(nullptr, 2 * (sh.send_capacity + sh.recv_capacity), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
      m != MAP_FAILED) {
    sh.base = static_cast<unsigned char*>(m);
  } else {
    std::perror("mmap");
    return 2;
  }
  c->pid[0] = getpid();
  const pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    return 2;
  }
  if (child == 0) {
    c->pid[1] = getpid();
    barrier(*c);
    run_rank(1, *c, opt, sh, nullptr);
    _exit(0);
  }
  barrier(*c);
  std::vector<result_row> rows;
  run_rank(0, *c, opt, sh, &rows);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "cma-vs-copy: rank 1 failed\n");
    return 1;
  }

  std::printf(
      "| op | size | variant | time ms | busbw GB/s | / cma | clean samples |\n|---|---|---|---|---|---|---|\n");
  for (const auto& r : rows) {
    double cma_time = 0;
    for (const auto& o : rows)
      if (o.op == r.op && o.size == r.size && o.variant == "cma") cma_time = o.median_s;
    const double busbw = static_cast<double>(r.size) / r.median_s / 2 / 1e9;
    std::printf("| %s | %s | %s | %.3f | %.2f | %s | %d/%d |\n", r.op.c_str(), size_text(r.size).c_str(),
                r.variant.c_str(), r.median_s * 1e3, busbw,
                cma_time > 0 ? (std::to_string(cma_time / r.median_s).substr(0, 4) + "x").c_str() : "-", r.clean,
                r.total);
  }
  return 0;
}
