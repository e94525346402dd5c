/* The table of float64 references, looked up by mixer name. */
#include "ref.h"
#include <string.h>

const RefMixer *ref_find(const char *name)
{
	static const RefMixer *const all[] = { &ref_rglru, &ref_samu };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (name && strcmp(all[i]->name, name) == 0)
			return all[i];
	return NULL;
}
