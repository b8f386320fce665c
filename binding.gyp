{
  "targets": [
    {
      "target_name": "svc_native",
      "sources": [
        "native/addon.cc",
        "native/mmap.cc",
        "native/cpu_features.cc",
        "native/threadpool.cc",
        "native/runtime.cc",
        "native/bandwidth.cc",
        "native/dtypes.cc",
        "native/dequant.cc",
        "native/dequant_iq.cc",
        "native/packed.cc",
        "native/kv_codec.cc",
        "native/kernels_scalar.cc",
        "native/kernels_avx2.cc",
        "native/kernels_avx512.cc",
        "native/matmul.cc",
        "native/norm_rope_act.cc",
        "native/attention.cc",
        "native/bidirectional_attention.cc",
        "native/moe.cc",
        "native/gated_delta.cc",
        "native/mla_attention.cc",
        "native/ssd_scan.cc",
        "native/chunk_gemm.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS"],
      "cflags_cc": ["-std=c++20", "-O3", "-fno-exceptions", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "cflags_cc!": ["-fno-rtti"],
      "ldflags": ["-pthread"]
    }
  ]
}
