// approx_probe: the measured error of the approximations halfpairs.c can
// only bound. Every f16 and bf16 input (all 65536 bit patterns) through
// tanh.approx.{f16x2,bf16x2} and ex2.approx.{f16x2,ftz.bf16x2}, and 2^22
// fp32 inputs through tanh.approx.f32 and ex2.approx.ftz.f32, against
// float64. Per op: the largest absolute and relative error over the input
// range the mixers use, and the mean signed relative error ("bias"): a
// bias near the bound is what makes the scan accumulate (halfpairs.c's
// bias+/bias- models); one near 0 makes its random model the right one.
//   nvcc -O2 -arch=sm_90 approx_probe.cu -o approx_probe && ./approx_probe
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

__global__ void half_ops(const uint32_t *in, uint32_t *th, uint32_t *e2, uint32_t *tb, uint32_t *eb, int n)
{
	int k = blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= n)
		return;
	uint32_t a = in[k], r;
	asm("tanh.approx.f16x2 %0, %1;" : "=r"(r) : "r"(a));
	th[k] = r;
	asm("ex2.approx.f16x2 %0, %1;" : "=r"(r) : "r"(a));
	e2[k] = r;
	asm("tanh.approx.bf16x2 %0, %1;" : "=r"(r) : "r"(a));
	tb[k] = r;
	asm("ex2.approx.ftz.bf16x2 %0, %1;" : "=r"(r) : "r"(a));
	eb[k] = r;
}

__global__ void f32_ops(const float *in, float *th, float *e2, int n)
{
	int k = blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= n)
		return;
	float r;
	asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(in[k]));
	th[k] = r;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(in[k]));
	e2[k] = r;
}

static double f16_val(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
	return h & 0x8000 ? -v : v;
}
static double bf16_val(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	std::memcpy(&f, &u, 4);
	return f;
}

// statistics of one op over inputs x in [lo, hi] with finite results
struct Stat {
	double maxabs = 0, maxrel = 0, bias = 0, rms = 0;
	long n = 0;
	void add(double got, double exact)
	{
		double d = got - exact, r = exact != 0 ? d / std::fabs(exact) : 0;
		maxabs = std::fmax(maxabs, std::fabs(d));
		maxrel = std::fmax(maxrel, std::fabs(r));
		bias += r;
		rms += r * r;
		n++;
	}
	void print(const char *op, const char *range, const char *bound)
	{
		std::printf("| %s | %s | %ld | %.3g | %.3g | %.3g | %.3g | %s |\n", op, range, n, maxabs, maxrel,
		            n ? bias / n : 0, n ? std::sqrt(rms / n) : 0, bound);
	}
};

int main()
{
	const int N = 65536, NF = 1 << 22;
	std::vector<uint32_t> in(N);
	for (int k = 0; k < N; k++)
		in[k] = (uint32_t)k | ((uint32_t)k << 16);   // each half the same pattern
	uint32_t *din, *d[4];
	cudaMalloc(&din, N * 4);
	for (auto &p : d)
		cudaMalloc(&p, N * 4);
	cudaMemcpy(din, in.data(), N * 4, cudaMemcpyHostToDevice);
	half_ops<<<N / 256, 256>>>(din, d[0], d[1], d[2], d[3], N);
	std::vector<uint32_t> out[4];
	for (int j = 0; j < 4; j++) {
		out[j].resize(N);
		cudaMemcpy(out[j].data(), d[j], N * 4, cudaMemcpyDeviceToHost);
	}
	std::vector<float> fin(NF), fth(NF), fe2(NF);
	for (int k = 0; k < NF; k++)
		fin[k] = (float)(-24.0 + 32.0 * (k + 0.5) / NF);   // [-24, 8]
	float *dfi, *dft, *dfe;
	cudaMalloc(&dfi, NF * 4);
	cudaMalloc(&dft, NF * 4);
	cudaMalloc(&dfe, NF * 4);
	cudaMemcpy(dfi, fin.data(), NF * 4, cudaMemcpyHostToDevice);
	f32_ops<<<NF / 256, 256>>>(dfi, dft, dfe, NF);
	cudaMemcpy(fth.data(), dft, NF * 4, cudaMemcpyDeviceToHost);
	cudaMemcpy(fe2.data(), dfe, NF * 4, cudaMemcpyDeviceToHost);
	if (cudaDeviceSynchronize() != cudaSuccess) {
		std::printf("CUDA error: %s\n", cudaGetErrorString(cudaGetLastError()));
		return 1;
	}
	std::printf("| op | inputs | n | max abs err | max rel err | mean rel err (bias) | rms rel err | documented |\n"
	            "|---|---|---|---|---|---|---|---|\n");
	// both halves of every word must agree (the pair is two independent ops)
	long mismatch = 0;
	for (int j = 0; j < 4; j++)
		for (int k = 0; k < N; k++)
			mismatch += (out[j][k] & 0xffff) != (out[j][k] >> 16);
	Stat s[8];
	for (int k = 0; k < N; k++) {
		double xh = f16_val((uint16_t)k), xb = bf16_val((uint16_t)k);
		double th = f16_val(out[0][k] & 0xffff), e2 = f16_val(out[1][k] & 0xffff);
		double tb = bf16_val(out[2][k] & 0xffff), eb = bf16_val(out[3][k] & 0xffff);
		if (std::isfinite(xh) && std::fabs(xh) <= 8)   // gates: 0.5 p, |p| <= 16
			s[0].add(th, std::tanh(xh));
		if (std::isfinite(xh) && xh >= -14 && xh <= 0)   // a = 2^x, normal results
			s[1].add(e2, std::exp2(xh));
		if (std::isfinite(xb) && std::fabs(xb) <= 8)
			s[2].add(tb, std::tanh(xb));
		if (std::isfinite(xb) && xb >= -24 && xb <= 0)
			s[3].add(eb, std::exp2(xb));
		// the gate near saturation: 1 - |tanh| is what r or 1 - r keeps
		if (std::isfinite(xh) && xh <= -2 && xh >= -8)
			s[4].add(1 + th, 1 + std::tanh(xh));
	}
	for (int k = 0; k < NF; k++) {
		double x = fin[k];
		if (std::fabs(x) <= 8)
			s[5].add(fth[k], std::tanh(x));
		if (x <= 0)
			s[6].add(fe2[k], std::exp2(x));
		if (x <= -2 && x >= -8)
			s[7].add(1 + (double)fth[k], 1 + std::tanh(x));
	}
	s[0].print("tanh.approx.f16x2", "all f16, |x| <= 8", "abs 2^-10.987 = 4.9e-4");
	s[1].print("ex2.approx.f16x2", "all f16 in [-14, 0]", "rel 2^-9.9 = 1.05e-3");
	s[2].print("tanh.approx.bf16x2", "all bf16, |x| <= 8", "abs 2^-8 = 3.9e-3");
	s[3].print("ex2.approx.ftz.bf16x2", "all bf16 in [-24, 0]", "rel 2^-7 = 7.8e-3");
	s[4].print("1 + tanh.approx.f16x2", "all f16 in [-8, -2]", "(from abs 2^-10.987)");
	s[5].print("tanh.approx.f32", "2^22 in [-8, 8]", "rel 2^-11 = 4.9e-4");
	s[6].print("ex2.approx.ftz.f32", "2^22 in [-24, 0]", "2 ulp");
	s[7].print("1 + tanh.approx.f32", "in [-8, -2]", "(from rel 2^-11)");
	std::printf("\nhalves that differ for equal inputs: %ld (0 expected)\n", mismatch);
	return 0;
}
