// Memory-mapped file access for the --no-fast-load loader path.
#include <napi.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string>

// mapFile(path) -> ArrayBuffer backed by a read-only private mapping; unmapped when collected.
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
  madvise(p, size, MADV_WILLNEED);
  return Napi::ArrayBuffer::New(env, p, size, [](Napi::Env, void* data, size_t* len) {
    munmap(data, *len);
    delete len;
  }, new size_t(size));
}

void InitMmap(Napi::Env env, Napi::Object exports) {
  exports.Set("mapFile", Napi::Function::New(env, MapFile));
}
