// Optimas seeds: preloaded (LD_PRELOAD) into an unmodified program whose inputs are random numbers
// seeded from the clock, it answers every seeding call with one fixed seed (OPTIMAS_PIN_SEED), so two
// runs of the program draw the same inputs and their GPU results can be compared bit for bit.
//
// Pinned: the C library's srand, srandom and srand48; libstdc++'s std::random_device (its exported
// _M_getval, which operator() calls), whose numbers become a fixed sequence; and cuRAND's host-side
// curandSetPseudoRandomGeneratorSeed. A seed a program computes itself and hands to an engine it
// constructs inline (std::mt19937 gen(time(0))) passes through no library call and is not pinned.
// Clocks are left alone: the program's own timing keeps working.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

static unsigned long long pinned_seed(void) {
  const char *text = getenv("OPTIMAS_PIN_SEED");
  return text && *text ? strtoull(text, NULL, 10) : 1ULL;
}

static void *next_symbol(const char *name) { return dlsym(RTLD_NEXT, name); }

void srand(unsigned int seed) {
  (void)seed;
  void (*real)(unsigned int) = (void (*)(unsigned int))next_symbol("srand");
  if (real) real((unsigned int)pinned_seed());
}

void srandom(unsigned int seed) {
  (void)seed;
  void (*real)(unsigned int) = (void (*)(unsigned int))next_symbol("srandom");
  if (real) real((unsigned int)pinned_seed());
}

void srand48(long seed) {
  (void)seed;
  void (*real)(long) = (void (*)(long))next_symbol("srand48");
  if (real) real((long)pinned_seed());
}

// std::random_device::_M_getval(): a member function, so its one argument is `this`. SplitMix64 over
// a counter started at the pinned seed: distinct numbers, the same in every run.
unsigned int _ZNSt13random_device9_M_getvalEv(void *self) {
  static uint64_t state;
  static int started;
  (void)self;
  if (!started) {
    state = pinned_seed();
    started = 1;
  }
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return (unsigned int)(z ^ (z >> 31));
}

// cuRAND's status type is an enum (an int); the generator is an opaque pointer.
int curandSetPseudoRandomGeneratorSeed(void *generator, unsigned long long seed) {
  (void)seed;
  int (*real)(void *, unsigned long long) =
      (int (*)(void *, unsigned long long))next_symbol("curandSetPseudoRandomGeneratorSeed");
  return real ? real(generator, pinned_seed()) : 102;  // CURAND_STATUS_NOT_INITIALIZED
}
