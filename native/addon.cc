// Node addon entry: each op family registers its functions on the exports object.
#include <napi.h>

void InitMmap(Napi::Env env, Napi::Object exports);

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  InitMmap(env, exports);
  return exports;
}

NODE_API_MODULE(svc_native, Init)
