{
  "targets": [
    {
      "target_name": "toy_native",
      "sources": [
        "native/addon.c",
        "native/pool.c",
        "native/readahead.c",
        "native/quants.c",
        "native/matmul.c",
        "native/ops.c",
        "native/plan.c",
        "native/attention.c",
        "native/bandwidth.c",
        "native/gemm.c",
        "native/attention_train.c",
        "native/train_ops.c"
      ],
      "cflags!": ["-O2", "-O0"],
      "cflags": ["-std=c11", "-O3", "-fno-strict-aliasing", "-Wall", "-Wno-unused-function", "-pthread"],
      "ldflags": ["-pthread"],
      "libraries": ["-lm"],
      "xcode_settings": {
        "OTHER_CFLAGS": ["-std=c11", "-O3"]
      }
    }
  ]
}
