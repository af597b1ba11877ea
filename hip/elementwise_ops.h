// Generated from src/expr/table.rs by src/native/render.rs: do not edit. The suite checks it
// is current; `RWO_BLESS=1 cargo test --test suite -- native` rewrites it.

struct neg_op {
  __device__ i64 operator()(i64 a0) const { return rwo_neg(a0); }
  __device__ float operator()(float a0) const { return rwo_neg(a0); }
  __device__ double operator()(double a0) const { return rwo_neg(a0); }
};
UNARY(neg, i64, f16, bf16, f32, f64)
struct recip_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_div(1.0f, a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_div(1.0, a0)); }
};
UNARY(recip, f16, bf16, f32, f64)
struct exp_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_exp(a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_exp(a0)); }
};
UNARY(exp, f16, bf16, f32, f64)
struct log_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_log(a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_log(a0)); }
};
UNARY(log, f16, bf16, f32, f64)
struct sin_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_sin(a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_sin(a0)); }
};
UNARY(sin, f16, bf16, f32, f64)
struct cos_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_cos(a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_cos(a0)); }
};
UNARY(cos, f16, bf16, f32, f64)
struct tanh_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_tanh(a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_tanh(a0)); }
};
UNARY(tanh, f16, bf16, f32, f64)
struct abs_op {
  __device__ u32 operator()(u32 a0) const { return a0; }
  __device__ i64 operator()(i64 a0) const { return rwo_abs(a0); }
  __device__ float operator()(float a0) const { return rwo_abs(a0); }
  __device__ double operator()(double a0) const { return rwo_abs(a0); }
};
UNARY(abs, u8, u32, i64, f16, bf16, f32, f64)
struct sqr_op {
  __device__ u32 operator()(u32 a0) const { return rwo_mul(a0, a0); }
  __device__ i64 operator()(i64 a0) const { return rwo_mul(a0, a0); }
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_mul(a0, a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_mul(a0, a0)); }
};
UNARY(sqr, u8, u32, i64, f16, bf16, f32, f64)
struct sqrt_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_sqrt(a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_sqrt(a0)); }
};
UNARY(sqrt, f16, bf16, f32, f64)
struct gelu_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_mul(rwo_mul(0.5f, a0), rwo_add(1.0f, rwo_tanh(rwo_mul(0.7978845608028654f, rwo_add(a0, rwo_mul(rwo_mul(rwo_mul(0.044715f, a0), a0), a0))))))); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_mul(rwo_mul(0.5, a0), rwo_add(1.0, rwo_tanh(rwo_mul(0.7978845608028654, rwo_add(a0, rwo_mul(rwo_mul(rwo_mul(0.044715, a0), a0), a0))))))); }
};
UNARY(gelu, f16, bf16, f32, f64)
struct gelu_erf_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_mul(rwo_mul(0.5f, a0), rwo_add(1.0f, rwo_erf(rwo_div(a0, 1.4142135623730951f))))); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_mul(rwo_mul(0.5, a0), rwo_add(1.0, rwo_erf(rwo_div(a0, 1.4142135623730951))))); }
};
UNARY(gelu_erf, f16, bf16, f32, f64)
struct erf_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_erf(a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_erf(a0)); }
};
UNARY(erf, f16, bf16, f32, f64)
struct relu_op {
  __device__ u32 operator()(u32 a0) const { return a0; }
  __device__ i64 operator()(i64 a0) const { return (rwo_lt(a0, (i64)0ll) ? (i64)0ll : a0); }
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : (rwo_lt(a0, 0.0f) ? 0.0f : a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : (rwo_lt(a0, 0.0) ? 0.0 : a0)); }
};
UNARY(relu, u8, u32, i64, f16, bf16, f32, f64)
struct silu_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_div(a0, rwo_add(1.0f, rwo_exp(rwo_neg(a0))))); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_div(a0, rwo_add(1.0, rwo_exp(rwo_neg(a0))))); }
};
UNARY(silu, f16, bf16, f32, f64)
struct sigmoid_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_div(1.0f, rwo_add(1.0f, rwo_exp(rwo_neg(a0))))); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_div(1.0, rwo_add(1.0, rwo_exp(rwo_neg(a0))))); }
};
UNARY(sigmoid, f16, bf16, f32, f64)
struct ceil_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_ceil(a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_ceil(a0)); }
};
UNARY(ceil, f16, bf16, f32, f64)
struct floor_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_floor(a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_floor(a0)); }
};
UNARY(floor, f16, bf16, f32, f64)
struct round_op {
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_round(a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_round(a0)); }
};
UNARY(round, f16, bf16, f32, f64)
struct sign_op {
  __device__ u32 operator()(u32 a0) const { return rwo_sign(a0); }
  __device__ i64 operator()(i64 a0) const { return rwo_sign(a0); }
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : rwo_sign(a0)); }
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : rwo_sign(a0)); }
};
UNARY(sign, u8, u32, i64, f16, bf16, f32, f64)
template <class C>
struct affine_f;
template <>
struct affine_f<float> {
  float p0; float p1;
  __device__ float operator()(float a0) const { return rwo_add(rwo_mul(a0, p0), p1); }
};
template <>
struct affine_f<double> {
  double p0; double p1;
  __device__ double operator()(double a0) const { return rwo_add(rwo_mul(a0, p0), p1); }
};
SCALAR2(affine, f16, bf16, f32, f64)
template <class C>
struct powf_f;
template <>
struct powf_f<float> {
  float p0;
  __device__ float operator()(float a0) const { float e0 = rwo_abs(p0); float e1 = rwo_mul(e0, 1.0f); float e2 = rwo_floor(e1); float e3 = rwo_mul(e0, 0.5f); float e4 = rwo_floor(e3); float e5 = rwo_mul(e4, 2.0f); bool e6 = rwo_eq(e2, e5); bool e7 = !(e6); float e8 = (e7 ? a0 : 1.0f); float e9 = rwo_mul(1.0f, e8); float e10 = rwo_mul(e0, 0.25f); float e11 = rwo_floor(e10); float e12 = rwo_mul(e11, 2.0f); bool e13 = rwo_eq(e4, e12); bool e14 = !(e13); float e15 = rwo_mul(a0, a0); float e16 = (e14 ? e15 : 1.0f); float e17 = rwo_mul(e9, e16); float e18 = rwo_mul(e0, 0.125f); float e19 = rwo_floor(e18); float e20 = rwo_mul(e19, 2.0f); bool e21 = rwo_eq(e11, e20); bool e22 = !(e21); float e23 = rwo_mul(e15, e15); float e24 = (e22 ? e23 : 1.0f); float e25 = rwo_mul(e17, e24); float e26 = rwo_mul(e0, 0.0625f); float e27 = rwo_floor(e26); float e28 = rwo_mul(e27, 2.0f); bool e29 = rwo_eq(e19, e28); bool e30 = !(e29); float e31 = rwo_mul(e23, e23); float e32 = (e30 ? e31 : 1.0f); float e33 = rwo_mul(e25, e32); float e34 = rwo_mul(e0, 0.03125f); float e35 = rwo_floor(e34); float e36 = rwo_mul(e35, 2.0f); bool e37 = rwo_eq(e27, e36); bool e38 = !(e37); float e39 = rwo_mul(e31, e31); float e40 = (e38 ? e39 : 1.0f); float e41 = rwo_mul(e33, e40); float e42 = rwo_abs(e41); float e43 = rwo_pow(a0, p0); return (!((!(rwo_eq(rwo_floor(p0), p0)) || !(rwo_le(e0, 16.0f)))) ? (rwo_lt(p0, 0.0f) ? (!((!(rwo_le(1.1754943508222875e-38f, e42)) || !(rwo_le(e42, 3.4028234663852886e38f)))) ? rwo_div(1.0f, e41) : e43) : e41) : e43); }
};
template <>
struct powf_f<double> {
  double p0;
  __device__ double operator()(double a0) const { double e0 = rwo_abs(p0); double e1 = rwo_mul(e0, 1.0); double e2 = rwo_floor(e1); double e3 = rwo_mul(e0, 0.5); double e4 = rwo_floor(e3); double e5 = rwo_mul(e4, 2.0); bool e6 = rwo_eq(e2, e5); bool e7 = !(e6); double e8 = (e7 ? a0 : 1.0); double e9 = rwo_mul(1.0, e8); double e10 = rwo_mul(e0, 0.25); double e11 = rwo_floor(e10); double e12 = rwo_mul(e11, 2.0); bool e13 = rwo_eq(e4, e12); bool e14 = !(e13); double e15 = rwo_mul(a0, a0); double e16 = (e14 ? e15 : 1.0); double e17 = rwo_mul(e9, e16); double e18 = rwo_mul(e0, 0.125); double e19 = rwo_floor(e18); double e20 = rwo_mul(e19, 2.0); bool e21 = rwo_eq(e11, e20); bool e22 = !(e21); double e23 = rwo_mul(e15, e15); double e24 = (e22 ? e23 : 1.0); double e25 = rwo_mul(e17, e24); double e26 = rwo_mul(e0, 0.0625); double e27 = rwo_floor(e26); double e28 = rwo_mul(e27, 2.0); bool e29 = rwo_eq(e19, e28); bool e30 = !(e29); double e31 = rwo_mul(e23, e23); double e32 = (e30 ? e31 : 1.0); double e33 = rwo_mul(e25, e32); double e34 = rwo_mul(e0, 0.03125); double e35 = rwo_floor(e34); double e36 = rwo_mul(e35, 2.0); bool e37 = rwo_eq(e27, e36); bool e38 = !(e37); double e39 = rwo_mul(e31, e31); double e40 = (e38 ? e39 : 1.0); double e41 = rwo_mul(e33, e40); double e42 = rwo_abs(e41); double e43 = rwo_pow(a0, p0); return (!((!(rwo_eq(rwo_floor(p0), p0)) || !(rwo_le(e0, 16.0)))) ? (rwo_lt(p0, 0.0) ? (!((!(rwo_le(2.2250738585072014e-308, e42)) || !(rwo_le(e42, 1.7976931348623157e308)))) ? rwo_div(1.0, e41) : e43) : e41) : e43); }
};
SCALAR1(powf, f16, bf16, f32, f64)
template <class C>
struct elu_f;
template <>
struct elu_f<float> {
  float p0;
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : (rwo_le(0.0f, a0) ? a0 : rwo_mul(p0, rwo_expm1(a0)))); }
};
template <>
struct elu_f<double> {
  double p0;
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : (rwo_le(0.0, a0) ? a0 : rwo_mul(p0, rwo_expm1(a0)))); }
};
SCALAR1(elu, f16, bf16, f32, f64)
template <class C>
struct clamp_f;
template <>
struct clamp_f<u32> {
  u32 p0; u32 p1;
  __device__ u32 operator()(u32 a0) const { return (rwo_lt(p1, a0) ? p1 : (rwo_lt(a0, p0) ? p0 : a0)); }
};
template <>
struct clamp_f<i64> {
  i64 p0; i64 p1;
  __device__ i64 operator()(i64 a0) const { return (rwo_lt(p1, a0) ? p1 : (rwo_lt(a0, p0) ? p0 : a0)); }
};
template <>
struct clamp_f<float> {
  float p0; float p1;
  __device__ float operator()(float a0) const { return (is_nan(a0) ? a0 : (rwo_lt(p1, a0) ? p1 : (rwo_lt(a0, p0) ? p0 : a0))); }
};
template <>
struct clamp_f<double> {
  double p0; double p1;
  __device__ double operator()(double a0) const { return (is_nan(a0) ? a0 : (rwo_lt(p1, a0) ? p1 : (rwo_lt(a0, p0) ? p0 : a0))); }
};
SCALAR2(clamp, u8, u32, i64, f16, bf16, f32, f64)
struct add_op {
  __device__ u32 operator()(u32 a0, u32 a1) const { return rwo_add(a0, a1); }
  __device__ i64 operator()(i64 a0, i64 a1) const { return rwo_add(a0, a1); }
  __device__ float operator()(float a0, float a1) const { return rwo_add(a0, a1); }
  __device__ double operator()(double a0, double a1) const { return rwo_add(a0, a1); }
};
BINARY(add, u8, u32, i64, f16, bf16, f32, f64)
struct sub_op {
  __device__ u32 operator()(u32 a0, u32 a1) const { return rwo_sub(a0, a1); }
  __device__ i64 operator()(i64 a0, i64 a1) const { return rwo_sub(a0, a1); }
  __device__ float operator()(float a0, float a1) const { return rwo_sub(a0, a1); }
  __device__ double operator()(double a0, double a1) const { return rwo_sub(a0, a1); }
};
BINARY(sub, u8, u32, i64, f16, bf16, f32, f64)
struct mul_op {
  __device__ u32 operator()(u32 a0, u32 a1) const { return rwo_mul(a0, a1); }
  __device__ i64 operator()(i64 a0, i64 a1) const { return rwo_mul(a0, a1); }
  __device__ float operator()(float a0, float a1) const { return rwo_mul(a0, a1); }
  __device__ double operator()(double a0, double a1) const { return rwo_mul(a0, a1); }
};
BINARY(mul, u8, u32, i64, f16, bf16, f32, f64)
struct div_op {
  __device__ u32 operator()(u32 a0, u32 a1) const { return rwo_div(a0, a1); }
  __device__ i64 operator()(i64 a0, i64 a1) const { return rwo_div(a0, a1); }
  __device__ float operator()(float a0, float a1) const { return rwo_div(a0, a1); }
  __device__ double operator()(double a0, double a1) const { return rwo_div(a0, a1); }
};
BINARY(div, u8, u32, i64, f16, bf16, f32, f64)
struct maximum_op {
  __device__ u32 operator()(u32 a0, u32 a1) const { return rwo_max(a0, a1); }
  __device__ i64 operator()(i64 a0, i64 a1) const { return rwo_max(a0, a1); }
  __device__ float operator()(float a0, float a1) const { return rwo_max(a0, a1); }
  __device__ double operator()(double a0, double a1) const { return rwo_max(a0, a1); }
};
BINARY(maximum, u8, u32, i64, f16, bf16, f32, f64)
struct minimum_op {
  __device__ u32 operator()(u32 a0, u32 a1) const { return rwo_min(a0, a1); }
  __device__ i64 operator()(i64 a0, i64 a1) const { return rwo_min(a0, a1); }
  __device__ float operator()(float a0, float a1) const { return rwo_min(a0, a1); }
  __device__ double operator()(double a0, double a1) const { return rwo_min(a0, a1); }
};
BINARY(minimum, u8, u32, i64, f16, bf16, f32, f64)
struct eq_op {
  __device__ bool operator()(u32 a0, u32 a1) const { return rwo_eq(a0, a1); }
  __device__ bool operator()(i64 a0, i64 a1) const { return rwo_eq(a0, a1); }
  __device__ bool operator()(float a0, float a1) const { return rwo_eq(a0, a1); }
  __device__ bool operator()(double a0, double a1) const { return rwo_eq(a0, a1); }
};
CMP(eq, u8, u32, i64, f16, bf16, f32, f64)
struct ne_op {
  __device__ bool operator()(u32 a0, u32 a1) const { return !(rwo_eq(a0, a1)); }
  __device__ bool operator()(i64 a0, i64 a1) const { return !(rwo_eq(a0, a1)); }
  __device__ bool operator()(float a0, float a1) const { return !(rwo_eq(a0, a1)); }
  __device__ bool operator()(double a0, double a1) const { return !(rwo_eq(a0, a1)); }
};
CMP(ne, u8, u32, i64, f16, bf16, f32, f64)
struct lt_op {
  __device__ bool operator()(u32 a0, u32 a1) const { return rwo_lt(a0, a1); }
  __device__ bool operator()(i64 a0, i64 a1) const { return rwo_lt(a0, a1); }
  __device__ bool operator()(float a0, float a1) const { return rwo_lt(a0, a1); }
  __device__ bool operator()(double a0, double a1) const { return rwo_lt(a0, a1); }
};
CMP(lt, u8, u32, i64, f16, bf16, f32, f64)
struct le_op {
  __device__ bool operator()(u32 a0, u32 a1) const { return rwo_le(a0, a1); }
  __device__ bool operator()(i64 a0, i64 a1) const { return rwo_le(a0, a1); }
  __device__ bool operator()(float a0, float a1) const { return rwo_le(a0, a1); }
  __device__ bool operator()(double a0, double a1) const { return rwo_le(a0, a1); }
};
CMP(le, u8, u32, i64, f16, bf16, f32, f64)
struct gt_op {
  __device__ bool operator()(u32 a0, u32 a1) const { return rwo_lt(a1, a0); }
  __device__ bool operator()(i64 a0, i64 a1) const { return rwo_lt(a1, a0); }
  __device__ bool operator()(float a0, float a1) const { return rwo_lt(a1, a0); }
  __device__ bool operator()(double a0, double a1) const { return rwo_lt(a1, a0); }
};
CMP(gt, u8, u32, i64, f16, bf16, f32, f64)
struct ge_op {
  __device__ bool operator()(u32 a0, u32 a1) const { return rwo_le(a1, a0); }
  __device__ bool operator()(i64 a0, i64 a1) const { return rwo_le(a1, a0); }
  __device__ bool operator()(float a0, float a1) const { return rwo_le(a1, a0); }
  __device__ bool operator()(double a0, double a1) const { return rwo_le(a1, a0); }
};
CMP(ge, u8, u32, i64, f16, bf16, f32, f64)
WHERE(u8, u8, u32, i64)
WHERE(u32, u8, u32, i64)
WHERE(i64, u8, u32, i64)
WHERE(f16, u8, u32, i64)
WHERE(bf16, u8, u32, i64)
WHERE(f32, u8, u32, i64)
WHERE(f64, u8, u32, i64)
CAST(u8, u8, u32, i64, f16, bf16, f32, f64)
CAST(u32, u8, u32, i64, f16, bf16, f32, f64)
CAST(i64, u8, u32, i64, f16, bf16, f32, f64)
CAST(f16, u8, u32, i64, f16, bf16, f32, f64)
CAST(bf16, u8, u32, i64, f16, bf16, f32, f64)
CAST(f32, u8, u32, i64, f16, bf16, f32, f64)
CAST(f64, u8, u32, i64, f16, bf16, f32, f64)
