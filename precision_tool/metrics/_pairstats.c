/* One pass over a pair of tensors computing every sum the ten metrics need (precision_tool.metrics.pair_stats).
 *
 * pass1(x, y, rtol, atol)  -> class counts, sums, extremes, worst element, relative-error and allclose counts
 * pass2(x, y, mean_x, mean_y, lo_x, scale_x, lo_y, scale_y, floor) -> sums of squared deviations, KL sums
 *
 * x and y are contiguous 1-D buffers of float16 ('e'), float32 ('f') or float64 ('d'), of equal length; every
 * value is widened to double exactly and all arithmetic is double. pair_stats.py holds the formulas and the
 * numpy version of the same two passes (used when this module is not built); both are tested to agree.
 *
 * Speed comes from blocks of BLOCK elements: each block is first summed on the assumption that every value is
 * finite (a loop the compiler vectorizes: OpenMP SIMD reductions, no branches). A block whose sums come out
 * non-finite -- a NaN or an infinity in it, or squares beyond 1.8e308 -- is summed again element by element,
 * leaving out the pairs that are not finite on both sides and counting them by class. Block sums are added to
 * the totals with Neumaier compensation, so the totals carry an error of about BLOCK ulp, not N ulp.
 * No pointer aliasing, no allocation, and the GIL is released while summing.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define BLOCK 256

/* On x86-64 with GCC, the vectorized loops are built three times -- AVX-512, AVX2 and the x86-64 baseline (SSE2) --
 * and the loader picks one for the CPU it runs on. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif
#define ZERO_REFERENCE_EPS 2.220446049250313e-16

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

static inline double log_positive(double x) {
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

/* ------------------------------------------------------------------------------------------------ buffers */
typedef struct { Py_buffer view; Kind kind; Py_ssize_t n; int held; } Input;

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

/* Elements [start, start + count) of an input as doubles, into out (one block: the kernels below see doubles only,
 * and these conversion loops vectorize on their own). */
VECTOR_CLONES static void to_double(const Input *in, Py_ssize_t start, Py_ssize_t count, double *out) {
    Py_ssize_t i;
    if (in->kind == KIND_HALF) {
        const uint16_t *h = (const uint16_t *)in->view.buf + start;
        for (i = 0; i < count; i++) out[i] = (double)half_to_float(h[i]);
    } else if (in->kind == KIND_FLOAT) {
        const float *f = (const float *)in->view.buf + start;
        for (i = 0; i < count; i++) out[i] = (double)f[i];
    } else {
        memcpy(out, (const double *)in->view.buf + start, (size_t)count * sizeof(double));
    }
}

/* ------------------------------------------------------------------------------------------------ pass 1 */
typedef struct {
    Py_ssize_t classes[16]; /* classes[4 * class(x) + class(y)] */
    Total sx, sy, sxx, syy, sxy, sdd, sad, rel_sum;
    double max_ad, worst_x, worst_y, min_x, max_x, min_y, max_y, rel_max;
    Py_ssize_t worst, nonzero_x, nonzero_y, rel_count, close;
} Pass1;

typedef struct {
    double sx, sy, sxx, syy, sxy, sdd, sad, rel_sum, max_ad, min_x, max_x, min_y, max_y, rel_max;
    Py_ssize_t nonzero_x, nonzero_y, rel_count, close;
} Block1;

/* A block's sums on the assumption that every value is finite: no branch, so the loops vectorize. Two loops over
 * the block (it is in L1 cache) rather than one: each keeps its accumulators in registers. */
VECTOR_CLONES static void block1_fast(const double *xs, const double *ys, Py_ssize_t n, double rtol, double atol,
                                      Block1 *o) {
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, sdd = 0, sad = 0, mad = 0;
    double rs = 0, rm = 0, rc = 0, cl = 0, nzx = 0, nzy = 0; /* counts as doubles (exact): one width per loop */
    double mnx = INFINITY, mxx = -INFINITY, mny = INFINITY, mxy = -INFINITY;
    Py_ssize_t i;
#pragma omp simd reduction(+:sx,sy,sxx,syy,sxy,sdd,sad) reduction(max:mad)
    for (i = 0; i < n; i++) {
        double x = xs[i], y = ys[i], d = x - y, ad = fabs(d);
        sx += x; sy += y; sxx += x * x; syy += y * y; sxy += x * y; sdd += d * d; sad += ad;
        mad = ad > mad ? ad : mad;
    }
#pragma omp simd reduction(+:rs,rc,cl) reduction(max:rm)
    for (i = 0; i < n; i++) {
        double ad = fabs(xs[i] - ys[i]), ay = fabs(ys[i]);
        double nonzero_ref = ay > ZERO_REFERENCE_EPS ? 1.0 : 0.0;
        double r = ad / (ay > ZERO_REFERENCE_EPS ? ay : 1.0) * nonzero_ref; /* no conditional division */
        rs += r; rm = r > rm ? r : rm; rc += nonzero_ref;
        cl += ad <= atol + rtol * ay ? 1.0 : 0.0;
    }
#pragma omp simd reduction(+:nzx,nzy) reduction(max:mxx,mxy) reduction(min:mnx,mny)
    for (i = 0; i < n; i++) {
        double x = xs[i], y = ys[i];
        nzx += fabs(x) > 0.0 ? 1.0 : 0.0; nzy += fabs(y) > 0.0 ? 1.0 : 0.0;
        mnx = x < mnx ? x : mnx; mxx = x > mxx ? x : mxx;
        mny = y < mny ? y : mny; mxy = y > mxy ? y : mxy;
    }
    o->sx = sx; o->sy = sy; o->sxx = sxx; o->syy = syy; o->sxy = sxy; o->sdd = sdd; o->sad = sad; o->rel_sum = rs;
    o->max_ad = mad; o->rel_max = rm; o->min_x = mnx; o->max_x = mxx; o->min_y = mny; o->max_y = mxy;
    o->nonzero_x = (Py_ssize_t)nzx; o->nonzero_y = (Py_ssize_t)nzy; o->rel_count = (Py_ssize_t)rc;
    o->close = (Py_ssize_t)cl;
}

/* The same sums over the pairs finite on both sides, every pair counted in classes; returns those pairs. */
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
    memset(p, 0, sizeof(*p));
    p->worst = -1;
    p->min_x = p->min_y = INFINITY;
    p->max_x = p->max_y = p->max_ad = -INFINITY;
    for (start = 0; start < n; start += BLOCK) {
        Py_ssize_t count = start + BLOCK < n ? BLOCK : n - start, finite = count, i;
        Block1 o;
        to_double(a, start, count, xs);
        to_double(b, start, count, ys);
        block1_fast(xs, ys, count, rtol, atol, &o);
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

/* KL_TERMS: one pair's share of pass 2, added to dxx, dyy, kl, tp, tq. */
#define KL_TERMS(x, y)                                                                                           \
    do {                                                                                                         \
        double dx = (x) - mean_x, dy = (y) - mean_y, pv = ((x) - lo_x) * scale_x, qv = ((y) - lo_y) * scale_y;   \
        pv = pv > floor ? pv : floor;                                                                            \
        qv = qv > floor ? qv : floor;                                                                            \
        dxx += dx * dx; dyy += dy * dy;                                                                          \
        kl += pv * log_positive(pv / qv);                                                                        \
        tp += pv; tq += qv;                                                                                      \
    } while (0)

/* One block of pass 2: out = {dxx, dyy, kl, tp, tq}. As in pass 1, summed branch-free first, and again pair by
 * pair, leaving out pairs not finite on both sides, when a sum comes out non-finite. */
VECTOR_CLONES static void block2(const double *xs, const double *ys, Py_ssize_t n, const double *c, double *out) {
    const double mean_x = c[0], mean_y = c[1], lo_x = c[2], scale_x = c[3], lo_y = c[4], scale_y = c[5], floor = c[6];
    double dxx = 0, dyy = 0, kl = 0, tp = 0, tq = 0;
    Py_ssize_t i;
#pragma omp simd reduction(+:dxx,dyy,kl,tp,tq)
    for (i = 0; i < n; i++) KL_TERMS(xs[i], ys[i]);
    if (!isfinite(dxx + dyy + kl + tp + tq)) {
        dxx = dyy = kl = tp = tq = 0;
        for (i = 0; i < n; i++)
            if (isfinite(xs[i]) && isfinite(ys[i])) KL_TERMS(xs[i], ys[i]);
    }
    out[0] = dxx; out[1] = dyy; out[2] = kl; out[3] = tp; out[4] = tq;
}

static void run_pass2(const Input *a, const Input *b, const double *c, Pass2 *p) {
    Py_ssize_t start, n = a->n;
    double xs[BLOCK], ys[BLOCK];
    memset(p, 0, sizeof(*p));
    for (start = 0; start < n; start += BLOCK) {
        Py_ssize_t count = start + BLOCK < n ? BLOCK : n - start;
        double out[5];
        to_double(a, start, count, xs);
        to_double(b, start, count, ys);
        block2(xs, ys, count, c, out);
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
    /* log_positive over a float64 buffer, in place: for the tests, which check it against numpy's log. */
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
    for (i = 0; i < a.n; i++) ((double *)a.view.buf)[i] = log_positive(((double *)a.view.buf)[i]);
    release(&a);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"pass1", pass1, METH_VARARGS, "pass1(x, y, rtol, atol) -> sums over the pairs (see pair_stats.py)"},
    {"pass2", pass2, METH_VARARGS,
     "pass2(x, y, mean_x, mean_y, lo_x, scale_x, lo_y, scale_y, floor) -> (dev_xx, dev_yy, kl, tp, tq)"},
    {"log_each", log_each, METH_VARARGS, "log_each(x): natural log of a float64 buffer of positive normals, in place"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pairstats", "Fused pair sums for the metrics.", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pairstats(void) { return PyModule_Create(&module); }
