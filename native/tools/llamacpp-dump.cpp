// llama.cpp's prompt logits and every intermediate tensor of one forward, for finding where
// toy's numerics part from llama.cpp's (which op, which position). Links against a llama.cpp
// build (the peers' one: /work/peers/llama_cpp_python-0.3.36/vendor/llama.cpp):
//   L=…/llama.cpp; g++ -O2 -std=c++17 llamacpp-dump.cpp -I$L/include -I$L/ggml/include \
//     -L$L/build/bin -lllama -lggml -lggml-base -Wl,-rpath,$L/build/bin -o llamacpp-dump
//   ./llamacpp-dump MODEL.gguf REPACK(0|1) OUTDIR|- TOKEN_ID...
// Settings as refs/llamacpp: F32 KV cache, no flash attention, the whole prompt in one batch,
// one thread. Writes /tmp/llamacpp-logits.f32 (positions × n_vocab) and, unless OUTDIR is "-",
// OUTDIR/NNNN_<tensor name>.<ne0>x<rest>.f32 for every F32 node in graph order (a node's name
// can repeat: Qcur-0 is the matmul output, then its reshapes and RoPE). With REPACK 1 (llama.cpp's
// default) IQ4_NL/Q4_0/Q4_K weights are repacked on AVX2 machines. Used to check that toy's IQ4
// kernels give llama.cpp's products bit for bit (native/vecdot_iq4.h).
#include "llama.h"
#include "ggml.h"
#include "ggml-backend.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
static std::string outdir;
static int counter = 0;
static bool cb(struct ggml_tensor *t, bool ask, void *) {
  if (ask) return true;
  if (t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t)) return true;
  std::string n = t->name;
  for (auto &c : n) if (c == '/' || c == ' ') c = '_';
  std::vector<float> buf(ggml_nelements(t));
  ggml_backend_tensor_get(t, buf.data(), 0, ggml_nbytes(t));
  char idx[16]; snprintf(idx, sizeof idx, "%04d_", counter++);
  std::string path = outdir + "/" + idx + n + "." + std::to_string(t->ne[0]) + "x" + std::to_string(ggml_nelements(t) / t->ne[0]) + ".f32";
  FILE *f = fopen(path.c_str(), "wb");
  fwrite(buf.data(), 4, buf.size(), f);
  fclose(f);
  return true;
}
int main(int argc, char **argv) {
  llama_backend_init();
  auto mp = llama_model_default_params();
  mp.use_extra_bufts = atoi(argv[2]) != 0;
  llama_model *model = llama_model_load_from_file(argv[1], mp);
  outdir = argv[3];
  std::vector<llama_token> ids;
  for (int i = 4; i < argc; i++) ids.push_back(atoi(argv[i]));
  auto cp = llama_context_default_params();
  cp.n_ctx = 256; cp.n_batch = 256; cp.n_ubatch = 256; cp.n_threads = 1; cp.n_threads_batch = 1;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED; cp.type_k = GGML_TYPE_F32; cp.type_v = GGML_TYPE_F32;
  if (outdir != "-") { cp.cb_eval = cb; cp.cb_eval_user_data = nullptr; }
  llama_context *ctx = llama_init_from_model(model, cp);
  llama_batch b = llama_batch_init(ids.size(), 0, 1);
  for (size_t i = 0; i < ids.size(); i++) { b.token[i] = ids[i]; b.pos[i] = i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1; }
  b.n_tokens = ids.size();
  if (llama_decode(ctx, b)) { fprintf(stderr, "decode failed\n"); return 1; }
  const int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
  FILE *f = fopen("/tmp/llamacpp-logits.f32", "wb");
  for (size_t i = 0; i < ids.size(); i++) fwrite(llama_get_logits_ith(ctx, i), 4, nv, f);
  fclose(f);
  return 0;
}
