#include <stdio.h>
#include <time.h>
#include <stdint.h>
#include <x86intrin.h>
static double bench(clockid_t id, int n){ struct timespec a,b,t; clock_gettime(CLOCK_MONOTONIC,&a); for(int i=0;i<n;i++) clock_gettime(id,&t); clock_gettime(CLOCK_MONOTONIC,&b); return ((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/n; }
int main(){ int n=2000000;
 for(int r=0;r<3;r++){
 printf("MONOTONIC %.1f ns  MONOTONIC_COARSE %.1f ns  REALTIME %.1f ns  ", bench(CLOCK_MONOTONIC,n), bench(CLOCK_MONOTONIC_COARSE,n), bench(CLOCK_REALTIME,n));
 struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a); uint64_t s=0; for(int i=0;i<n;i++) s+=__rdtsc(); clock_gettime(CLOCK_MONOTONIC,&b);
 printf("rdtsc %.1f ns (%lu)\n", ((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/n, s&1);
 }
 struct timespec res; clock_getres(CLOCK_MONOTONIC_COARSE,&res); printf("coarse res %ld ns\n", res.tv_nsec);
}
