{
  "targets": [
    {
      "target_name": "svc_native",
      "sources": [
        "native/addon.cc",
        "native/mmap.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS"],
      "cflags_cc": ["-std=c++17", "-O3", "-fno-exceptions"],
      "cflags_cc!": ["-fno-rtti"]
    }
  ]
}
