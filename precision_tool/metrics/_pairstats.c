/* One pass over a pair of tensors computing every sum the ten metrics need (precision_tool.metrics.pair_stats).
 *
 * pass1(x, y, rtol, atol)  -> class counts, sums, extremes, worst element, relative-error and allclose counts
 * pass2(x, y, mean_x, mean_y, lo_x, scale_x, lo_y, scale_y, floor) -> sums of squared deviations, KL sums
 * same_bytes(a, b)         -> whether two buffers hold the same bytes (the comparator's shared-input check)
 *
 * x and y are contiguous 1-D buffers of float16 ('e'), float32 ('f') or float64 ('d'), of equal length; every
 * value is widened to double exactly and all arithmetic is double. pair_stats.py holds the formulas and the
 * numpy version of the same two passes (used when this module is not built); both are tested to agree.
 *
 * Speed comes from blocks of BLOCK elements: each block is widened to double (float16 by the CPU's F16C
 * instructions where it has them) and summed in one loop on the assumption that every value is finite (a loop
 * the compiler vectorizes: OpenMP SIMD reductions, no branches, products added with fused multiply-adds where
 * the CPU has them). A block whose sums come out non-finite -- a NaN or an infinity in it, or squares beyond
 * 1.8e308 -- is summed again element by element, leaving out the pairs that are not finite on both sides and
 * counting them by class. Block sums are added to the totals with Neumaier compensation, so the totals carry an
 * error of about BLOCK ulp, not N ulp. No pointer aliasing, no allocation, and the GIL is released while summing.
 *
 * The kernels are compiled three times on x86-64 with GCC -- for AVX-512, for AVX2 with FMA and F16C, and for the
 * baseline -- by reading the second part of this file once per instruction set. The module uses the widest the
 * CPU runs; isas() lists them and use_isa(name) picks another (the tests check every version against numpy).
 */
#ifndef PAIRSTATS_KERNELS /* ============================================= the first reading: the module itself */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define BLOCK 256
#define ZERO_REFERENCE_EPS 2.220446049250313e-16

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define MULTIVERSION 1
#include <immintrin.h>
#else
#define MULTIVERSION 0
#endif

enum { FINITE = 0, NAN_CLASS = 1, POSINF = 2, NEGINF = 3 };

typedef struct { double sum, comp; } Total;

static inline void total_add(Total *t, double v) {
    double s = t->sum + v;
    if (fabs(t->sum) >= fabs(v)) t->comp += (t->sum - s) + v; else t->comp += (v - s) + t->sum;
    t->sum = s;
}
static inline double total_value(const Total *t) {
    return isfinite(t->sum) ? t->sum + t->comp : t->sum;
}

/* Bit casts through a union (memcpy keeps GCC from vectorizing the loops that use them). */
typedef union { double d; uint64_t u; } Bits;
static inline uint64_t bits_of(double d) { Bits b; b.d = d; return b.u; }
static inline double double_of(uint64_t u) { Bits b; b.u = u; return b.d; }

/* A non-negative integer below 2**52 as a double, with integer operations only (vectorizes where a 64-bit
 * integer conversion does not: SSE2, NEON). */
static inline double small_uint_to_double(uint64_t v) {
    return double_of(0x4330000000000000ULL | v) - 4503599627370496.0; /* 2**52 */
}

/* float16 bits -> float, exactly, with 32-bit integer operations only (they vectorize twice as wide as 64-bit ones)
 * and no arithmetic on subnormal floats (slow on some CPUs): a subnormal half is its mantissa times 2**-24. */
typedef union { float f; uint32_t u; } Bits32;

static inline float half_to_float(uint16_t h) {
    uint32_t e = ((uint32_t)h >> 10) & 0x1f, m = (uint32_t)h & 0x3ff, sign = ((uint32_t)h & 0x8000) << 16;
    Bits32 v;
    v.u = e == 31 ? (0x7f800000u | (m << 13)) : (((e + 112) << 23) | (m << 13));
    v.f = e == 0 ? (float)(int32_t)m * 0x1p-24f : v.f;
    v.u |= sign;
    return v.f;
}

typedef enum { KIND_HALF, KIND_FLOAT, KIND_DOUBLE } Kind;

static inline int classify(double v) {
    if (isfinite(v)) return FINITE;
    if (isnan(v)) return NAN_CLASS;
    return v > 0 ? POSINF : NEGINF;
}

/* Natural log of a positive normal double, < 1 ulp: fdlibm's e_log.c reduction and polynomial without its
 * branches (this is what lets the KL loop vectorize). Callers guarantee positive normal arguments. */
static const double LN2_HI = 6.93147180369123816490e-01, LN2_LO = 1.90821492927058770002e-10,
    LG1 = 6.666666666666735130e-01, LG2 = 3.999999999940941908e-01, LG3 = 2.857142874366239149e-01,
    LG4 = 2.222219843214978396e-01, LG5 = 1.818357216161805012e-01, LG6 = 1.531383769920937332e-01,
    LG7 = 1.479819860511658591e-01;

/* ------------------------------------------------------------------------------------------------ buffers */
typedef struct { Py_buffer view; Kind kind; Py_ssize_t n; int held; } Input;

/* The sums of one block (pass 1); counts are doubles in the kernels (exact below 2**53). */
typedef struct {
    double sx, sy, sxx, syy, sxy, sdd, sad, rel_sum, max_ad, min_x, max_x, min_y, max_y, rel_max;
    Py_ssize_t nonzero_x, nonzero_y, rel_count, close;
} Block1;

/* What a version of the kernels offers: widening a block to double, and the two block sums. */
typedef struct {
    const char *name;
    void (*to_double)(const Input *in, Py_ssize_t start, Py_ssize_t count, double *out);
    void (*block1)(const double *xs, const double *ys, Py_ssize_t n, double rtol, double atol, Block1 *o);
    void (*block2)(const double *xs, const double *ys, Py_ssize_t n, const double *c, double *out);
    double (*log_positive)(double x);
} Kernels;

/* ------------------------------------------------------------------------------------------------ versions */
#define PAIRSTATS_KERNELS 1
#if MULTIVERSION
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx2,fma,f16c")
#define V(name) name##_avx512
#define V_NAME "avx512"
#define V_F16C 16
#include "_pairstats.c"
#undef V
#undef V_NAME
#undef V_F16C
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define V(name) name##_avx2
#define V_NAME "avx2"
#define V_F16C 8
#include "_pairstats.c"
#undef V
#undef V_NAME
#undef V_F16C
#pragma GCC pop_options
#endif

#define V(name) name##_baseline
#define V_NAME "baseline"
#define V_F16C 0
#include "_pairstats.c"
#undef V
#undef V_NAME
#undef V_F16C

/* The versions this CPU runs, widest first, and the one in use (the widest unless use_isa chose another). */
static const Kernels *runnable[3];
static int runnable_count;
static const Kernels *chosen = &kernels_baseline;

static void find_runnable(void) {
    runnable_count = 0;
#if MULTIVERSION
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")
            && __builtin_cpu_supports("avx512dq"))
            runnable[runnable_count++] = &kernels_avx512;
        runnable[runnable_count++] = &kernels_avx2;
    }
#endif
    runnable[runnable_count++] = &kernels_baseline;
    chosen = runnable[0];
}

static int get_input(PyObject *object, Input *input, const char *label) {
    const char *format;
    char code;
    input->held = 0;
    if (PyObject_GetBuffer(object, &input->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    input->held = 1;
    format = input->view.format ? input->view.format : "B";
    if (*format == '<' || *format == '=' || *format == '@') format++;
    code = format[0];
    if (format[1] != '\0' || input->view.ndim > 1) code = '?';
    if (code == 'e' && input->view.itemsize == 2) input->kind = KIND_HALF;
    else if (code == 'f' && input->view.itemsize == 4) input->kind = KIND_FLOAT;
    else if (code == 'd' && input->view.itemsize == 8) input->kind = KIND_DOUBLE;
    else {
        PyErr_Format(PyExc_TypeError, "%s: a contiguous 1-D float16/float32/float64 buffer is needed, not '%s'",
                     label, input->view.format ? input->view.format : "B");
        return -1;
    }
    input->n = input->view.len / input->view.itemsize;
    return 0;
}

static void release(Input *input) {
    if (input->held) PyBuffer_Release(&input->view);
    input->held = 0;
}

static int get_pair(PyObject *x, PyObject *y, Input *a, Input *b) {
    b->held = 0;
    if (get_input(x, a, "x") < 0 || get_input(y, b, "y") < 0) return -1;
    if (a->n != b->n) {
        PyErr_Format(PyExc_ValueError, "x has %zd elements, y %zd", a->n, b->n);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------------ pass 1 */
typedef struct {
    Py_ssize_t classes[16]; /* classes[4 * class(x) + class(y)] */
    Total sx, sy, sxx, syy, sxy, sdd, sad, rel_sum;
    double max_ad, worst_x, worst_y, min_x, max_x, min_y, max_y, rel_max;
    Py_ssize_t worst, nonzero_x, nonzero_y, rel_count, close;
} Pass1;

/* The same sums as a kernel's block1 over the pairs finite on both sides, every pair counted in classes; returns
 * those pairs. */
static Py_ssize_t block1_careful(const double *xs, const double *ys, Py_ssize_t n, double rtol, double atol,
                                 Block1 *o, Py_ssize_t *classes) {
    Py_ssize_t i, finite = 0;
    memset(o, 0, sizeof(*o));
    o->min_x = o->min_y = INFINITY;
    o->max_x = o->max_y = -INFINITY;
    for (i = 0; i < n; i++) {
        double x = xs[i], y = ys[i], d, ad, ay;
        int cx = classify(x), cy = classify(y);
        classes[4 * cx + cy]++;
        if (cx != FINITE || cy != FINITE) continue;
        finite++;
        d = x - y; ad = fabs(d); ay = fabs(y);
        o->sx += x; o->sy += y; o->sxx += x * x; o->syy += y * y; o->sxy += x * y; o->sdd += d * d; o->sad += ad;
        if (ad > o->max_ad) o->max_ad = ad;
        if (ay > ZERO_REFERENCE_EPS) {
            double r = ad / ay;
            o->rel_sum += r; o->rel_count++;
            if (r > o->rel_max) o->rel_max = r;
        }
        o->close += ad <= atol + rtol * ay;
        o->nonzero_x += x != 0.0; o->nonzero_y += y != 0.0;
        if (x < o->min_x) o->min_x = x;
        if (x > o->max_x) o->max_x = x;
        if (y < o->min_y) o->min_y = y;
        if (y > o->max_y) o->max_y = y;
    }
    return finite;
}

static void run_pass1(const Input *a, const Input *b, double rtol, double atol, Pass1 *p) {
    Py_ssize_t start, n = a->n;
    double xs[BLOCK], ys[BLOCK];
    const Kernels *k = chosen;
    memset(p, 0, sizeof(*p));
    p->worst = -1;
    p->min_x = p->min_y = INFINITY;
    p->max_x = p->max_y = p->max_ad = -INFINITY;
    for (start = 0; start < n; start += BLOCK) {
        Py_ssize_t count = start + BLOCK < n ? BLOCK : n - start, finite = count, i;
        Block1 o;
        k->to_double(a, start, count, xs);
        k->to_double(b, start, count, ys);
        k->block1(xs, ys, count, rtol, atol, &o);
        if (!isfinite(o.sx + o.sy + o.sxx + o.syy + o.sdd)) finite = block1_careful(xs, ys, count, rtol, atol, &o,
                                                                                      p->classes);
        else p->classes[0] += count;
        if (!finite) continue;
        total_add(&p->sx, o.sx); total_add(&p->sy, o.sy); total_add(&p->sxx, o.sxx); total_add(&p->syy, o.syy);
        total_add(&p->sxy, o.sxy); total_add(&p->sdd, o.sdd); total_add(&p->sad, o.sad);
        total_add(&p->rel_sum, o.rel_sum);
        if (o.rel_max > p->rel_max) p->rel_max = o.rel_max;
        if (o.min_x < p->min_x) p->min_x = o.min_x;
        if (o.max_x > p->max_x) p->max_x = o.max_x;
        if (o.min_y < p->min_y) p->min_y = o.min_y;
        if (o.max_y > p->max_y) p->max_y = o.max_y;
        p->nonzero_x += o.nonzero_x; p->nonzero_y += o.nonzero_y; p->rel_count += o.rel_count; p->close += o.close;
        if (o.max_ad > p->max_ad) { /* the block's first finite pair with its largest error */
            for (i = 0; i < count; i++) {
                if (isfinite(xs[i]) && isfinite(ys[i]) && fabs(xs[i] - ys[i]) == o.max_ad) {
                    p->max_ad = o.max_ad; p->worst = start + i; p->worst_x = xs[i]; p->worst_y = ys[i];
                    break;
                }
            }
        }
    }
}

static PyObject *pass1(PyObject *self, PyObject *args) {
    PyObject *x, *y, *classes;
    double rtol, atol;
    Input a, b;
    Pass1 p;
    int k;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOdd", &x, &y, &rtol, &atol)) return NULL;
    if (get_pair(x, y, &a, &b) < 0) { release(&a); release(&b); return NULL; }
    Py_BEGIN_ALLOW_THREADS
    run_pass1(&a, &b, rtol, atol, &p);
    Py_END_ALLOW_THREADS
    release(&a); release(&b);
    classes = PyTuple_New(16);
    if (!classes) return NULL;
    for (k = 0; k < 16; k++) PyTuple_SET_ITEM(classes, k, PyLong_FromSsize_t(p.classes[k]));
    return Py_BuildValue("(Nddddddddnddddddnnnddn)", classes, total_value(&p.sx), total_value(&p.sy),
                         total_value(&p.sxx), total_value(&p.syy), total_value(&p.sxy), total_value(&p.sdd),
                         total_value(&p.sad), p.max_ad, p.worst, p.worst_x, p.worst_y, p.min_x, p.max_x, p.min_y,
                         p.max_y, p.nonzero_x, p.nonzero_y, p.rel_count, total_value(&p.rel_sum), p.rel_max, p.close);
}

/* ------------------------------------------------------------------------------------------------ pass 2 */
typedef struct { Total dxx, dyy, kl, tp, tq; } Pass2;

static void run_pass2(const Input *a, const Input *b, const double *c, Pass2 *p) {
    Py_ssize_t start, n = a->n;
    double xs[BLOCK], ys[BLOCK];
    const Kernels *k = chosen;
    memset(p, 0, sizeof(*p));
    for (start = 0; start < n; start += BLOCK) {
        Py_ssize_t count = start + BLOCK < n ? BLOCK : n - start;
        double out[5];
        k->to_double(a, start, count, xs);
        k->to_double(b, start, count, ys);
        k->block2(xs, ys, count, c, out);
        total_add(&p->dxx, out[0]); total_add(&p->dyy, out[1]); total_add(&p->kl, out[2]);
        total_add(&p->tp, out[3]); total_add(&p->tq, out[4]);
    }
}

static PyObject *pass2(PyObject *self, PyObject *args) {
    PyObject *x, *y;
    double c[7];
    Input a, b;
    Pass2 p;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOddddddd", &x, &y, &c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6])) return NULL;
    if (get_pair(x, y, &a, &b) < 0) { release(&a); release(&b); return NULL; }
    Py_BEGIN_ALLOW_THREADS
    run_pass2(&a, &b, c, &p);
    Py_END_ALLOW_THREADS
    release(&a); release(&b);
    return Py_BuildValue("(ddddd)", total_value(&p.dxx), total_value(&p.dyy), total_value(&p.kl),
                         total_value(&p.tp), total_value(&p.tq));
}

static PyObject *log_each(PyObject *self, PyObject *args) {
    /* The kernels' log over a float64 buffer, in place: for the tests, which check it against numpy's log. */
    PyObject *x;
    Input a;
    Py_ssize_t i;
    (void)self;
    if (!PyArg_ParseTuple(args, "O", &x)) return NULL;
    if (get_input(x, &a, "x") < 0) { release(&a); return NULL; }
    if (a.kind != KIND_DOUBLE || a.view.readonly) {
        release(&a);
        PyErr_SetString(PyExc_TypeError, "x: a writable float64 buffer is needed");
        return NULL;
    }
    for (i = 0; i < a.n; i++) ((double *)a.view.buf)[i] = chosen->log_positive(((double *)a.view.buf)[i]);
    release(&a);
    Py_RETURN_NONE;
}

static PyObject *same_bytes(PyObject *self, PyObject *args) {
    /* Whether two buffers hold the same bytes: one memcmp, the GIL released (Python compares two memoryviews item
     * by item, 30 times slower; bytes slices would copy). */
    PyObject *x, *y;
    Py_buffer a, b;
    int same;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO", &x, &y)) return NULL;
    if (PyObject_GetBuffer(x, &a, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (PyObject_GetBuffer(y, &b, PyBUF_C_CONTIGUOUS) < 0) { PyBuffer_Release(&a); return NULL; }
    same = a.len == b.len;
    if (same && a.len) {
        Py_BEGIN_ALLOW_THREADS
        same = memcmp(a.buf, b.buf, (size_t)a.len) == 0;
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&a); PyBuffer_Release(&b);
    return PyBool_FromLong(same);
}

static PyObject *isas(PyObject *self, PyObject *unused) {
    PyObject *names = PyTuple_New(runnable_count);
    int i;
    (void)self; (void)unused;
    if (!names) return NULL;
    for (i = 0; i < runnable_count; i++) {
        PyObject *name = PyUnicode_FromString(runnable[i]->name);
        if (!name) { Py_DECREF(names); return NULL; }
        PyTuple_SET_ITEM(names, i, name);
    }
    return names;
}

static PyObject *use_isa(PyObject *self, PyObject *args) {
    const char *name;
    const Kernels *before = chosen;
    int i;
    (void)self;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    for (i = 0; i < runnable_count; i++) {
        if (!strcmp(runnable[i]->name, name)) {
            chosen = runnable[i];
            return PyUnicode_FromString(before->name);
        }
    }
    PyErr_Format(PyExc_ValueError, "instruction set %s: not built or not run by this CPU", name);
    return NULL;
}

static PyMethodDef methods[] = {
    {"pass1", pass1, METH_VARARGS, "pass1(x, y, rtol, atol) -> sums over the pairs (see pair_stats.py)"},
    {"pass2", pass2, METH_VARARGS,
     "pass2(x, y, mean_x, mean_y, lo_x, scale_x, lo_y, scale_y, floor) -> (dev_xx, dev_yy, kl, tp, tq)"},
    {"log_each", log_each, METH_VARARGS, "log_each(x): natural log of a float64 buffer of positive normals, in place"},
    {"same_bytes", same_bytes, METH_VARARGS, "same_bytes(a, b) -> whether two contiguous buffers hold the same bytes"},
    {"isas", isas, METH_NOARGS, "isas() -> the kernel versions this CPU runs, widest (the default) first"},
    {"use_isa", use_isa, METH_VARARGS, "use_isa(name) -> the version in use before; the kernels are name's now"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pairstats", "Fused pair sums for the metrics.", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pairstats(void) {
    find_runnable();
    return PyModule_Create(&module);
}

#else /* ======================================================== the later readings: one version of the kernels */

/* a * b + c, fused where the instruction set has FMA (one rounding: the sums are a little more accurate). */
#if defined(__FMA__)
#define MADD(a, b, c) fma((a), (b), (c))
#else
#define MADD(a, b, c) ((a) * (b) + (c))
#endif

static inline double V(log_positive)(double x) {
    uint64_t bits, mant, i, exponent;
    double f, s, z, w, r, hfsq, dk;
    bits = bits_of(x);
    exponent = bits >> 52;
    mant = bits & 0x000fffffffffffffULL;
    i = (mant + 0x95f619980c433ULL) & 0x0010000000000000ULL; /* set when the mantissa is >= sqrt(2) */
    bits = mant | (i ^ 0x3ff0000000000000ULL);                 /* m in [sqrt(2)/2, sqrt(2)) */
    exponent += i >> 52;
    f = double_of(bits) - 1.0;
    s = f / (2.0 + f);
    z = s * s;
    w = z * z;
    r = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7))) + w * (LG2 + w * (LG4 + w * LG6));
    hfsq = 0.5 * f * f;
    dk = small_uint_to_double(exponent) - 1023.0;
    return dk * LN2_HI - ((hfsq - (s * (hfsq + r) + dk * LN2_LO)) - f);
}

/* Elements [start, start + count) of an input as doubles, into out (count <= BLOCK). A buffer need not be aligned
 * to its item size (a memory-mapped file's tensor sits at its file offset): such a block is copied into an aligned
 * one first. */
static void V(to_double)(const Input *in, Py_ssize_t start, Py_ssize_t count, double *out) {
    Py_ssize_t i = 0;
    const char *bytes = (const char *)in->view.buf + start * in->view.itemsize;
    if (in->kind == KIND_HALF) {
        uint16_t aligned[BLOCK];
        const uint16_t *h = (const uint16_t *)(const void *)bytes;
        if ((uintptr_t)bytes % sizeof(uint16_t)) {
            memcpy(aligned, bytes, (size_t)count * sizeof(uint16_t));
            h = aligned;
        }
#if V_F16C == 16
        for (; i + 16 <= count; i += 16) {
            __m512 f = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + i)));
            _mm512_storeu_pd(out + i, _mm512_cvtps_pd(_mm512_castps512_ps256(f)));
            _mm512_storeu_pd(out + i + 8, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(
                _mm512_castps_pd(f), 1))));
        }
#elif V_F16C == 8
        for (; i + 8 <= count; i += 8) {
            __m256 f = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i)));
            _mm256_storeu_pd(out + i, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
            _mm256_storeu_pd(out + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
        }
#endif
        for (; i < count; i++) out[i] = (double)half_to_float(h[i]);
    } else if (in->kind == KIND_FLOAT) {
        float aligned[BLOCK];
        const float *f = (const float *)(const void *)bytes;
        if ((uintptr_t)bytes % sizeof(float)) {
            memcpy(aligned, bytes, (size_t)count * sizeof(float));
            f = aligned;
        }
        for (i = 0; i < count; i++) out[i] = (double)f[i];
    } else {
        memcpy(out, bytes, (size_t)count * sizeof(double));
    }
}

/* A block's pass-1 sums on the assumption that every value is finite: one loop, no branch, so it vectorizes.
 * The four counts share one accumulator, each in its own 10-bit field (a block has fewer than 1024 pairs). */
static void V(block1)(const double *xs, const double *ys, Py_ssize_t n, double rtol, double atol, Block1 *o) {
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, sdd = 0, sad = 0, mad = 0, rs = 0, rm = 0, counts = 0;
    double mnx = INFINITY, mxx = -INFINITY, mny = INFINITY, mxy = -INFINITY;
    uint64_t packed;
    Py_ssize_t i;
#pragma omp simd reduction(+:sx,sy,sxx,syy,sxy,sdd,sad,rs,counts) reduction(max:mad,rm,mxx,mxy) \
    reduction(min:mnx,mny)
    for (i = 0; i < n; i++) {
        double x = xs[i], y = ys[i], d = x - y, ad = fabs(d), ay = fabs(y);
        int nonzero_ref = ay > ZERO_REFERENCE_EPS;
        double r = ad / (nonzero_ref ? ay : 1.0);
        r = nonzero_ref ? r : 0.0; /* no conditional division */
        sx += x; sy += y; sxx = MADD(x, x, sxx); syy = MADD(y, y, syy); sxy = MADD(x, y, sxy);
        sdd = MADD(d, d, sdd); sad += ad;
        mad = ad > mad ? ad : mad;
        rs += r; rm = r > rm ? r : rm;
        counts += (nonzero_ref ? 1.0 : 0.0) + (ad <= atol + rtol * ay ? 1024.0 : 0.0)
                  + (x != 0.0 ? 1048576.0 : 0.0) + (y != 0.0 ? 1073741824.0 : 0.0);
        mnx = x < mnx ? x : mnx; mxx = x > mxx ? x : mxx;
        mny = y < mny ? y : mny; mxy = y > mxy ? y : mxy;
    }
    packed = (uint64_t)counts;
    o->sx = sx; o->sy = sy; o->sxx = sxx; o->syy = syy; o->sxy = sxy; o->sdd = sdd; o->sad = sad; o->rel_sum = rs;
    o->max_ad = mad; o->rel_max = rm; o->min_x = mnx; o->max_x = mxx; o->min_y = mny; o->max_y = mxy;
    o->rel_count = (Py_ssize_t)(packed & 1023); o->close = (Py_ssize_t)((packed >> 10) & 1023);
    o->nonzero_x = (Py_ssize_t)((packed >> 20) & 1023); o->nonzero_y = (Py_ssize_t)(packed >> 30);
}

/* ln(1 + u) for |u| <= NEAR_ONE: its Taylor series to u**12, whose first omitted term is below 2**-62 |u| (< 1 ulp
 * of the result); no division, no table. */
#define NEAR_ONE 0.03125
static inline double V(log1p_near_zero)(double u) {
    double h = -1.0 / 12;
    h = MADD(h, u, 1.0 / 11); h = MADD(h, u, -1.0 / 10); h = MADD(h, u, 1.0 / 9); h = MADD(h, u, -1.0 / 8);
    h = MADD(h, u, 1.0 / 7); h = MADD(h, u, -1.0 / 6); h = MADD(h, u, 1.0 / 5); h = MADD(h, u, -1.0 / 4);
    h = MADD(h, u, 1.0 / 3); h = MADD(h, u, -0.5);
    return MADD(h * u, u, u);
}

/* ln(1 + u) for |u| <= NEAR_ONE_SHORT: the same series to u**8, whose first omitted term is below 2**-59 |u|. */
#define NEAR_ONE_SHORT 0.0078125
static inline double V(log1p_nearer_zero)(double u) {
    double h = -1.0 / 8;
    h = MADD(h, u, 1.0 / 7); h = MADD(h, u, -1.0 / 6); h = MADD(h, u, 1.0 / 5); h = MADD(h, u, -1.0 / 4);
    h = MADD(h, u, 1.0 / 3); h = MADD(h, u, -0.5);
    return MADD(h * u, u, u);
}

/* PROFILES: one pair's squared deviations and KL profiles p = max((x - lo_x) * scale_x, floor), q likewise. */
#define PROFILES(x, y)                                                                                           \
    double dx = (x) - mean_x, dy = (y) - mean_y, pv = ((x) - lo_x) * scale_x, qv = ((y) - lo_y) * scale_y;       \
    pv = pv > floor ? pv : floor;                                                                                \
    qv = qv > floor ? qv : floor;                                                                                \
    dxx += dx * dx; dyy += dy * dy; /* unfused: as numpy's std, digit for digit in the CSV */                    \
    tp += pv; tq += qv

/* One block of pass 2: out = {dxx, dyy, kl, tp, tq}, kl = sum p ln(p/q). Where every ratio p/q of the block is
 * within NEAR_ONE of 1 -- two tensors that agree, the usual case -- ln(p/q) is ln(1 + u) with u = (p - q) / q
 * (p - q exact there), by the series above, cut at u**8 where every |u| <= NEAR_ONE_SHORT (float16 against float32:
 * 97% of blocks, measured); otherwise it is log_positive(p / q). As in pass 1, summed branch-free
 * first, and again pair by pair, leaving out pairs not finite on both sides, when a sum comes out non-finite. */
static void V(block2)(const double *xs, const double *ys, Py_ssize_t n, const double *c, double *out) {
    const double mean_x = c[0], mean_y = c[1], lo_x = c[2], scale_x = c[3], lo_y = c[4], scale_y = c[5], floor = c[6];
    double dxx = 0, dyy = 0, kl = 0, tp = 0, tq = 0, far = 0;
    double ps[BLOCK], qs[BLOCK], us[BLOCK];
    Py_ssize_t i;
#pragma omp simd reduction(+:dxx,dyy,tp,tq) reduction(max:far)
    for (i = 0; i < n; i++) {
        PROFILES(xs[i], ys[i]);
        ps[i] = pv;
        qs[i] = qv;
        us[i] = (pv - qv) / qv;
        far = fabs(us[i]) > far ? fabs(us[i]) : far;
    }
    if (far <= NEAR_ONE_SHORT) {
#pragma omp simd reduction(+:kl)
        for (i = 0; i < n; i++) kl = MADD(ps[i], V(log1p_nearer_zero)(us[i]), kl);
    } else if (far <= NEAR_ONE) {
#pragma omp simd reduction(+:kl)
        for (i = 0; i < n; i++) kl = MADD(ps[i], V(log1p_near_zero)(us[i]), kl);
    } else {
#pragma omp simd reduction(+:kl)
        for (i = 0; i < n; i++) kl = MADD(ps[i], V(log_positive)(ps[i] / qs[i]), kl);
    }
    if (!isfinite(dxx + dyy + kl + tp + tq)) {
        dxx = dyy = kl = tp = tq = 0;
        for (i = 0; i < n; i++) {
            if (isfinite(xs[i]) && isfinite(ys[i])) {
                PROFILES(xs[i], ys[i]);
                kl = MADD(pv, V(log_positive)(pv / qv), kl);
            }
        }
    }
    out[0] = dxx; out[1] = dyy; out[2] = kl; out[3] = tp; out[4] = tq;
}
#undef PROFILES
#undef NEAR_ONE
#undef NEAR_ONE_SHORT
#undef MADD

static const Kernels V(kernels) = {V_NAME, V(to_double), V(block1), V(block2), V(log_positive)};

#endif
