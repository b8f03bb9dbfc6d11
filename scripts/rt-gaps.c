// docs/BENCHMARKS.md §14: a SCHED_FIFO 10 busy loop on CPU 1 for N seconds, reporting its longest
// gap, how many gaps exceeded 20 µs / 200 µs / 2 ms, and the share of time off the CPU.
// Build and run as root: gcc -O2 -o /tmp/rt-gaps scripts/rt-gaps.c && /tmp/rt-gaps 3
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sched.h>
#include <stdint.h>
static uint64_t ns(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000ull+t.tv_nsec;}
int main(int c,char**v){
  double secs=atof(v[1]); cpu_set_t s;CPU_ZERO(&s);CPU_SET(1,&s);sched_setaffinity(0,sizeof s,&s);
  struct sched_param p={.sched_priority=10}; if(sched_setscheduler(0,SCHED_FIFO,&p))perror("fifo");
  uint64_t t0=ns(),last=t0,end=t0+(uint64_t)(secs*1e9),max=0; long g20=0,g200=0,g2000=0; uint64_t sum=0;
  while(1){uint64_t n=ns(); uint64_t d=n-last; if(d>20000){g20++; sum+=d;} if(d>200000)g200++; if(d>2000000)g2000++; if(d>max)max=d; last=n; if(n>end)break;}
  printf("max %.3f ms, gaps>20us %ld >200us %ld >2ms %ld, off-cpu %.1f%%\n",max/1e6,g20,g200,g2000,100.0*sum/(end-t0));
}
