// Argument unpacking for the op bindings. The TypeScript face validates shapes with friendly
// messages; these checks are the last line of defence so that a wrong call throws a TypeError
// instead of reading or writing out of bounds. Typed arrays are used in place, never copied.
#pragma once
#include <napi.h>

#include <cstdint>
#include <string>

namespace svc {

class Args {
 public:
  Args(const Napi::CallbackInfo& info, const char* op) : info_(info), op_(op) {}

  bool ok() const { return ok_; }
  Napi::Env env() const { return info_.Env(); }

  // Typed array argument i of the given type with at least min_len elements.
  float* f32(size_t i, const char* name, size_t min_len) {
    return static_cast<float*>(array(i, name, napi_float32_array, min_len, false));
  }
  float* f32_or_null(size_t i, const char* name, size_t min_len) {
    return static_cast<float*>(array(i, name, napi_float32_array, min_len, true));
  }
  int32_t* i32(size_t i, const char* name, size_t min_len) {
    return static_cast<int32_t*>(array(i, name, napi_int32_array, min_len, false));
  }
  uint8_t* u8(size_t i, const char* name, size_t min_len) {
    return static_cast<uint8_t*>(array(i, name, napi_uint8_array, min_len, false));
  }
  // Element count of the typed array passed last (after a successful f32/i32/u8 call).
  size_t last_length() const { return last_len_; }
  size_t last_byte_offset() const { return last_offset_; }

  int64_t integer(size_t i, const char* name, int64_t min, int64_t max) {
    if (!ok_) return 0;
    const double v = number(i, name);
    if (!ok_) return 0;
    if (v != (double)(int64_t)v || v < (double)min || v > (double)max) {
      fail(std::string(name) + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
      return 0;
    }
    return (int64_t)v;
  }

  double number(size_t i, const char* name) {
    if (!ok_) return 0;
    if (i >= info_.Length() || !info_[i].IsNumber()) {
      fail(std::string(name) + " must be a number");
      return 0;
    }
    return info_[i].As<Napi::Number>().DoubleValue();
  }

  bool boolean(size_t i, const char* name) {
    if (!ok_) return false;
    if (i >= info_.Length() || !info_[i].IsBoolean()) {
      fail(std::string(name) + " must be a boolean");
      return false;
    }
    return info_[i].As<Napi::Boolean>().Value();
  }

  // Throws TypeError (first failure only) and marks the call failed.
  void fail(const std::string& msg) {
    if (!ok_) return;
    ok_ = false;
    Napi::TypeError::New(info_.Env(), std::string(op_) + ": " + msg).ThrowAsJavaScriptException();
  }
  void fail_range(const std::string& msg) {
    if (!ok_) return;
    ok_ = false;
    Napi::RangeError::New(info_.Env(), std::string(op_) + ": " + msg).ThrowAsJavaScriptException();
  }

 private:
  void* array(size_t i, const char* name, napi_typedarray_type want, size_t min_len, bool nullable) {
    if (!ok_) return nullptr;
    static const char* kNames[] = {"Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
                                   "Int32Array", "Uint32Array", "Float32Array", "Float64Array"};
    if (nullable && (i >= info_.Length() || info_[i].IsUndefined() || info_[i].IsNull())) return nullptr;
    napi_typedarray_type type;
    size_t length = 0, offset = 0;
    void* data = nullptr;
    napi_value ab;
    if (i >= info_.Length() || !info_[i].IsTypedArray() ||
        napi_get_typedarray_info(info_.Env(), info_[i], &type, &length, &data, &ab, &offset) != napi_ok ||
        type != want) {
      fail(std::string(name) + " must be a " + kNames[want]);
      return nullptr;
    }
    if (length < min_len) {
      fail(std::string(name) + " has " + std::to_string(length) + " elements, needs at least " + std::to_string(min_len));
      return nullptr;
    }
    last_len_ = length;
    last_offset_ = offset;
    // A zero-length array may report a null pointer; hand out a valid one.
    static uint64_t empty = 0;
    return data ? data : &empty;
  }

  const Napi::CallbackInfo& info_;
  const char* op_;
  bool ok_ = true;
  size_t last_len_ = 0;
  size_t last_offset_ = 0;
};

}  // namespace svc
