// Compiles the kernel bodies of IMPL_HEADER twice, portable (NAME(f) = f##_generic) and AVX2
// (f##_avx2, inside a target("avx2,fma,f16c") region), and defines PICK(f): the variant this
// CPU runs. A .c file defines IMPL_HEADER (e.g. "ops_impl.h") and HAVE_X86, then includes this.
#define IMPL_AVX2 0
#define NAME(f) f##_generic
#include IMPL_HEADER
#undef IMPL_AVX2
#undef NAME

#if HAVE_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#include "hsum_avx2.h"
#include "vmath_avx2.h"
#define IMPL_AVX2 1
#define NAME(f) f##_avx2
#include IMPL_HEADER
#undef IMPL_AVX2
#undef NAME
#pragma GCC pop_options
#define PICK(f) (toy_has_avx2 ? f##_avx2 : f##_generic)
#else
#define PICK(f) f##_generic
#endif
