// Memory-mapped file access for the GGUF loader, page advice on ranges of a mapping, and zeroed
// buffers on transparent huge pages (the KV cache).
//
// The fast loader packs weights tensor by tensor straight from the mapping and then drops the
// source pages from the process with MADV_DONTNEED. On a private read-only file mapping that only
// removes the page-table entries (the page cache keeps the data, and RSS stops counting it); a
// later read of the range, should one come, faults the same bytes back in from the file. munmap of
// the range would free the address space too, but turn any stray later read into a crash.
#include <napi.h>
#include <v8.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/resource.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

constexpr size_t kHuge = 2 << 20;

// A background move of a file mapping's weights into anonymous huge pages (relocateToHugePages).
// The mapping's deleter stops it first: it takes `mu`, which the mover holds while it moves a chunk.
struct Relocation {
  std::mutex mu;
  bool stopped = false;
};

// The relocations running, by the base of the mapping they work on.
std::mutex& relocations_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::map<void*, std::shared_ptr<Relocation>>& relocations() {
  static auto* r = new std::map<void*, std::shared_ptr<Relocation>>();
  return *r;
}

// Stops the relocation on the mapping at `base`, if one runs (before the mapping is unmapped).
static void stop_relocation(void* base) {
  std::shared_ptr<Relocation> job;
  {
    std::lock_guard<std::mutex> lk(relocations_mutex());
    auto it = relocations().find(base);
    if (it == relocations().end()) return;
    job = it->second;
    relocations().erase(it);
  }
  std::lock_guard<std::mutex> lk(job->mu);
  job->stopped = true;
}

// Replaces the 2 MiB at `dst` (aligned; read-only file pages) with anonymous huge pages holding the
// same bytes, at the same address: a copy made elsewhere, then mremap'ed over them. A reader of the
// range at that moment sees the old pages or the new ones (the move holds the mm's write lock), and
// both hold the same bytes. The file's pages stay in the page cache, out of this process's RSS.
static bool move_to_huge_page(uint8_t* dst) {
  uint8_t* raw = static_cast<uint8_t*>(mmap(nullptr, 2 * kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (raw == MAP_FAILED) return false;
  uint8_t* tmp = reinterpret_cast<uint8_t*>(((uintptr_t)raw + kHuge - 1) & ~(uintptr_t)(kHuge - 1));
  if (tmp > raw) munmap(raw, (size_t)(tmp - raw));
  munmap(tmp + kHuge, (size_t)(raw + 2 * kHuge - (tmp + kHuge)));
  madvise(tmp, kHuge, MADV_HUGEPAGE);
  std::memcpy(tmp, dst, kHuge);
  mprotect(tmp, kHuge, PROT_READ);
  if (mremap(tmp, kHuge, kHuge, MREMAP_MAYMOVE | MREMAP_FIXED, dst) == MAP_FAILED) {
    munmap(tmp, kHuge);
    return false;
  }
  return true;
}

// An ArrayBuffer over a mapping this file made, unmapped by V8 when it is collected (`length` rounded
// up to `unit`, the granule it was mapped in). N-API's external ArrayBuffers are Node Buffers
// underneath on Node 20 and stop at 4 GiB (buffer.constants.MAX_LENGTH; past it the call fails and
// frees twice), while an 8B model's file or a KV pool is larger; V8's own API has no such limit.
// N-API's napi_value is a v8::Local<v8::Value> (node's js_native_api_v8.h converts them by a plain
// cast both ways), so the V8 handle is handed back as one. V8 may run the deleter on any thread:
// munmap is safe there.
template <size_t unit>
static Napi::Value mapping_array_buffer(Napi::Env env, void* data, size_t length) {
  std::unique_ptr<v8::BackingStore> store = v8::ArrayBuffer::NewBackingStore(
      data, length,
      [](void* p, size_t len, void*) {
        stop_relocation(p);
        munmap(p, (len + unit - 1) / unit * unit);
      },
      nullptr);
  v8::Local<v8::ArrayBuffer> buffer = v8::ArrayBuffer::New(v8::Isolate::GetCurrent(), std::move(store));
  v8::Local<v8::Value> value = buffer;
  napi_value out;
  static_assert(sizeof(out) == sizeof(value), "napi_value is a v8::Local<v8::Value>");
  std::memcpy(&out, &value, sizeof out);
  return Napi::Value(env, out);
}

// releaseHeapMemory(): V8's LowMemoryNotification on the calling thread's isolate: full collections that
// compact old space and shrink the young generation (src/kernels/release-heap.ts says when it runs).
static Napi::Value ReleaseHeapMemory(const Napi::CallbackInfo& info) {
  v8::Isolate::GetCurrent()->LowMemoryNotification();
  return info.Env().Undefined();
}

// allocHugePages(bytes) -> zeroed ArrayBuffer from an anonymous mapping, 2 MiB aligned, with
// MADV_HUGEPAGE asked for (THP is 'madvise' on this machine: nothing else gets huge pages); unmapped
// when collected. Nothing is touched here, so memory is only committed where it is written, as for a
// plain ArrayBuffer (the KV pool is sized for the worst case). The KV cache lives there: attention
// reads a sequence's blocks from anywhere in a pool of gigabytes, and with 4 KiB pages nearly every
// 16 KiB block costs its own TLB misses.
static Napi::Value AllocHugePages(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const double want = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
  if (!(want >= 0 && want <= 1099511627776.0) || want != (double)(size_t)want) {
    Napi::RangeError::New(env, "allocHugePages(bytes): a whole number of bytes up to 1 TiB").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const size_t bytes = (size_t)want;
  if (bytes == 0) return Napi::ArrayBuffer::New(env, 0);
  const size_t len = (bytes + kHuge - 1) / kHuge * kHuge;
  // Map one huge page more than needed and trim both ends, so the buffer starts on a 2 MiB boundary.
  uint8_t* raw = static_cast<uint8_t*>(mmap(nullptr, len + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (raw == MAP_FAILED) {
    Napi::Error::New(env, "allocHugePages: out of memory (" + std::to_string(bytes) + " bytes)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  uint8_t* p = reinterpret_cast<uint8_t*>(((uintptr_t)raw + kHuge - 1) & ~(uintptr_t)(kHuge - 1));
  if (p > raw) munmap(raw, (size_t)(p - raw));
  if (p + len < raw + len + kHuge) munmap(p + len, (size_t)(raw + len + kHuge - (p + len)));
  madvise(p, len, MADV_HUGEPAGE);  // advisory: without THP the pages are simply small
  return mapping_array_buffer<kHuge>(env, p, bytes);
}

// mapFile(path, sequential?) -> ArrayBuffer backed by a read-only private mapping; unmapped when
// collected. sequential: the caller reads it front to back (MADV_SEQUENTIAL); otherwise the whole
// file is asked for ahead (MADV_WILLNEED).
static Napi::Value MapFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(env, "mapFile(path: string)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::string path = info[0].As<Napi::String>().Utf8Value();
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    Napi::Error::New(env, "mapFile: cannot open " + path).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    Napi::Error::New(env, "mapFile: cannot stat " + path).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return Napi::ArrayBuffer::New(env, 0);
  }
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    Napi::Error::New(env, "mapFile: mmap failed for " + path).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  // The fast loader reads front to back and gives the kernel its own hints (adviseRange).
  const bool sequential = info.Length() > 1 && info[1].ToBoolean().Value();
  madvise(p, size, sequential ? MADV_SEQUENTIAL : MADV_WILLNEED);
  return mapping_array_buffer<1>(env, p, size);
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14; older kernels answer EINVAL and get WILLNEED instead
#endif

// adviseRange(buffer, offset, length, advice): advice 0 = release (MADV_DONTNEED), 1 = read ahead
// (MADV_WILLNEED), 2 = populate (map the pages now, so first use takes no faults). The range is
// shrunk inwards to whole pages, so pages shared with a neighbouring tensor are left alone.
// Returns the bytes advised. Only for buffers made by mapFile.
static Napi::Value AdviseRange(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsArrayBuffer() || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsNumber()) {
    Napi::TypeError::New(env, "adviseRange(buffer: ArrayBuffer, offset: number, length: number, advice: number)")
        .ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::ArrayBuffer buf = info[0].As<Napi::ArrayBuffer>();
  const double off = info[1].As<Napi::Number>().DoubleValue();
  const double len = info[2].As<Napi::Number>().DoubleValue();
  const int advice = info[3].As<Napi::Number>().Int32Value();
  const double size = (double)buf.ByteLength();
  if (!(off >= 0 && len >= 0 && off + len <= size) || advice < 0 || advice > 2) {
    Napi::RangeError::New(env, "adviseRange: range or advice out of bounds").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  const uintptr_t base = (uintptr_t)buf.Data();
  // Release only whole pages inside the range; read-ahead and populate may cover the edges too.
  uintptr_t b = base + (uintptr_t)off, e = b + (uintptr_t)len;
  if (advice == 0) {
    b = (b + page - 1) & ~(page - 1);
    e &= ~(page - 1);
  } else {
    b &= ~(page - 1);
    e = std::min((e + page - 1) & ~(page - 1), (base + (uintptr_t)size + page - 1) & ~(page - 1));
  }
  if (e <= b) return Napi::Number::New(env, 0);
  void* p = reinterpret_cast<void*>(b);
  const size_t n = e - b;
  int rc;
  if (advice == 0) rc = madvise(p, n, MADV_DONTNEED);
  else if (advice == 1) rc = madvise(p, n, MADV_WILLNEED);
  else {
    // Weights used in place are read at every step: back to normal reclaim (MADV_SEQUENTIAL would
    // let the kernel treat their pages as read once), then mapped now.
    madvise(p, n, MADV_NORMAL);
    if ((rc = madvise(p, n, MADV_POPULATE_READ)) != 0) rc = madvise(p, n, MADV_WILLNEED);
  }
  return Napi::Number::New(env, rc == 0 ? (double)n : 0);
}

// relocateToHugePages(buffer, ranges: Float64Array of (offset, length) pairs) -> number of 2 MiB
// chunks it will move: starts a background thread that moves the whole 2 MiB-aligned chunks of the
// ranges of a mapFile mapping (read-only weights: the packed-weights cache) into anonymous
// transparent huge pages, in place (move_to_huge_page), so the buffer and every view of it keep
// their addresses. Decode streams the weights: on 4 KiB page-cache pages it ran 6-11% slower than
// from huge pages (a TLB walk every 4 KiB, and the hardware prefetcher stops at page boundaries).
// The thread runs at nice 19, on CPU time serving does not want; the mapping's deleter stops it.
// RSS stays flat: each chunk's file pages leave as its copy arrives.
static Napi::Value RelocateToHugePages(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsArrayBuffer() || !info[1].IsTypedArray()) {
    Napi::TypeError::New(env, "relocateToHugePages(buffer: ArrayBuffer, ranges: Float64Array)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::ArrayBuffer buf = info[0].As<Napi::ArrayBuffer>();
  Napi::Float64Array ranges = info[1].As<Napi::Float64Array>();
  uint8_t* base = static_cast<uint8_t*>(buf.Data());
  const size_t size = buf.ByteLength();
  std::vector<uint8_t*> chunks;
  for (size_t i = 0; i + 1 < ranges.ElementLength(); i += 2) {
    const double off = ranges[i], len = ranges[i + 1];
    if (!(off >= 0 && len >= 0 && off + len <= (double)size)) {
      Napi::RangeError::New(env, "relocateToHugePages: a range lies outside the buffer").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    const uintptr_t b = ((uintptr_t)base + (uintptr_t)off + kHuge - 1) & ~(uintptr_t)(kHuge - 1);
    const uintptr_t e = ((uintptr_t)base + (uintptr_t)(off + len)) & ~(uintptr_t)(kHuge - 1);
    for (uintptr_t c = b; c + kHuge <= e; c += kHuge) chunks.push_back(reinterpret_cast<uint8_t*>(c));
  }
  if (chunks.empty()) return Napi::Number::New(env, 0);
  auto job = std::make_shared<Relocation>();
  {
    std::lock_guard<std::mutex> lk(relocations_mutex());
    if (relocations().count(base)) return Napi::Number::New(env, 0);  // already moving
    relocations()[base] = job;
  }
  const size_t count = chunks.size();
  std::thread([job, chunks = std::move(chunks), base] {
    // Nice 19: a free core runs it at once, and under load it takes ~1.5% of one (SCHED_IDLE could
    // starve for as long as a busy server's kernel threads spin between steps).
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    for (uint8_t* c : chunks) {
      std::lock_guard<std::mutex> lk(job->mu);
      if (job->stopped || !move_to_huge_page(c)) break;
    }
    std::lock_guard<std::mutex> lk(relocations_mutex());
    auto it = relocations().find(base);
    if (it != relocations().end() && it->second == job) relocations().erase(it);
  }).detach();
  return Napi::Number::New(env, (double)count);
}

void InitMmap(Napi::Env env, Napi::Object exports) {
  exports.Set("mapFile", Napi::Function::New(env, MapFile));
  exports.Set("adviseRange", Napi::Function::New(env, AdviseRange));
  exports.Set("allocHugePages", Napi::Function::New(env, AllocHugePages));
  exports.Set("releaseHeapMemory", Napi::Function::New(env, ReleaseHeapMemory));
  exports.Set("relocateToHugePages", Napi::Function::New(env, RelocateToHugePages));
}
