/*
 * countmad: an LD_PRELOAD shim that counts the MADs a libibumad program
 * (OpenSM) hands to umad_send, by management class, method and attribute,
 * and writes the counts to $COUNTMAD_OUT when the program exits.
 *
 * Why here: ibsim keeps no per-client MAD counter, OpenSM only logs single
 * MADs at DEBUG verbosity (which would slow the run we are timing), and
 * umad2sim forwards write(2) without counting. umad_send is the one call
 * every SMP OpenSM sends goes through, and it is reached through the PLT of
 * libosmvendor, so preloading a definition interposes it. Counting is a
 * few relaxed atomic adds per MAD.
 *
 * Output, one record per line:
 *   span <first send, ns since epoch> <last send, ns since epoch>
 *   mad <class> <method> <attr> <count>     (hex class/method/attr)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*send_fn)(int, int, void *, int, int, int);
typedef void *(*getmad_fn)(void *);

/* Attributes of SMP classes are below 0x100 except vendor-specific ones
 * (0xFF00..0xFFFF), which fold into bucket 0x100. Other classes are counted
 * per class and method with attribute bucket 0x101. */
#define NATTR 0x102
static uint64_t counts[2][256][NATTR]; /* [DR?][method][attr bucket] */
static uint64_t other[256][256];       /* [class][method] */
static uint64_t first_ns, last_ns;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count(const uint8_t *mad)
{
	uint8_t cls = mad[1], method = mad[3];
	uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);
	if (cls == 0x01 || cls == 0x81) {
		unsigned b = attr < 0x100 ? attr : 0x100;
		__atomic_fetch_add(&counts[cls == 0x81][method][b], 1, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(&other[cls][method], 1, __ATOMIC_RELAXED);
	}
	uint64_t t = now_ns(), zero = 0;
	__atomic_compare_exchange_n(&first_ns, &zero, t, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	uint64_t l = __atomic_load_n(&last_ns, __ATOMIC_RELAXED);
	while (t > l && !__atomic_compare_exchange_n(&last_ns, &l, t, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

int umad_send(int fd, int agentid, void *umad, int length, int timeout_ms, int retries)
{
	static send_fn real_send;
	static getmad_fn get_mad;
	if (!real_send) {
		real_send = (send_fn)dlsym(RTLD_NEXT, "umad_send");
		get_mad = (getmad_fn)dlsym(RTLD_DEFAULT, "umad_get_mad");
		if (!real_send || !get_mad) {
			fprintf(stderr, "countmad: cannot resolve umad_send/umad_get_mad: %s\n", dlerror());
			abort();
		}
	}
	if (umad && length >= 24)
		count((const uint8_t *)get_mad(umad));
	return real_send(fd, agentid, umad, length, timeout_ms, retries);
}

__attribute__((destructor)) static void countmad_write(void)
{
	const char *path = getenv("COUNTMAD_OUT");
	if (!path || !*path)
		return;
	FILE *f = fopen(path, "w");
	if (!f) {
		perror("countmad: " "COUNTMAD_OUT");
		return;
	}
	fprintf(f, "span %llu %llu\n", (unsigned long long)first_ns, (unsigned long long)last_ns);
	for (int dr = 0; dr < 2; dr++)
		for (int m = 0; m < 256; m++)
			for (int a = 0; a < NATTR; a++)
				if (counts[dr][m][a])
					fprintf(f, "mad %x %x %x %llu\n", dr ? 0x81 : 0x01, m, a, (unsigned long long)counts[dr][m][a]);
	for (int c = 0; c < 256; c++)
		for (int m = 0; m < 256; m++)
			if (other[c][m])
				fprintf(f, "mad %x %x %x %llu\n", c, m, 0x101, (unsigned long long)other[c][m]);
	fclose(f);
}
