/* Parameter initialisation as a script declares it (see pinit.h). */
#include "pinit.h"
#include <math.h>
#include <string.h>

double pinit_value(const char *kind, double a, double b, Rng *r)
{
	if (!kind)
		return NAN;   /* no init (recur_param_init failed): poison, never a crash */
	if (!strcmp(kind, "zeros")) return 0.0;
	if (!strcmp(kind, "const")) return a;
	if (!strcmp(kind, "normal")) return a * rng_normal(r);
	double u = a + (b - a) * rng_uniform(r);
	return log(exp(-0.5 * log(u)) - 1.0);
}
