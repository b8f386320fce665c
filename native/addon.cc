// Node addon entry: each op family registers its functions on the exports object.
#include <napi.h>

void InitMmap(Napi::Env env, Napi::Object exports);

namespace svc {
void InitMatmul(Napi::Env env, Napi::Object exports);
void InitNormRopeAct(Napi::Env env, Napi::Object exports);
void InitAttention(Napi::Env env, Napi::Object exports);
void InitBidirectionalAttention(Napi::Env env, Napi::Object exports);
void InitMoe(Napi::Env env, Napi::Object exports);
void InitGatedDelta(Napi::Env env, Napi::Object exports);
void InitMlaAttention(Napi::Env env, Napi::Object exports);
void InitSsdScan(Napi::Env env, Napi::Object exports);
void InitRuntime(Napi::Env env, Napi::Object exports);
void InitBandwidth(Napi::Env env, Napi::Object exports);
}  // namespace svc

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  InitMmap(env, exports);
  svc::InitMatmul(env, exports);
  svc::InitNormRopeAct(env, exports);
  svc::InitAttention(env, exports);
  svc::InitBidirectionalAttention(env, exports);
  svc::InitMoe(env, exports);
  svc::InitGatedDelta(env, exports);
  svc::InitMlaAttention(env, exports);
  svc::InitSsdScan(env, exports);
  svc::InitRuntime(env, exports);
  svc::InitBandwidth(env, exports);
  return exports;
}

NODE_API_MODULE(svc_native, Init)
