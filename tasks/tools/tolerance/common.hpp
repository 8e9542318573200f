#pragma once
#include <cstdint>
#include <cmath>
#include <cstring>
#include <vector>
#include <cstdio>
#include <algorithm>
struct Rng { uint64_t s; explicit Rng(uint64_t seed):s(seed){}
  uint64_t next(){ uint64_t z=(s+=0x9e3779b97f4a7c15ULL); z=(z^(z>>30))*0xbf58476d1ce4e5b9ULL; z=(z^(z>>27))*0x94d049bb133111ebULL; return z^(z>>31);}
  double uni(){ return (next()>>11)*(1.0/9007199254740992.0);} // [0,1)
  double normal(){ double u1=uni(), u2=uni(); if(u1<1e-300) u1=1e-300; return std::sqrt(-2*std::log(u1))*std::cos(2*M_PI*u2);} };
inline float round_mant(float x, int bits){ // RN to `bits` explicit mantissa bits
  uint32_t u; std::memcpy(&u,&x,4); int drop=23-bits; uint32_t half=1u<<(drop-1); uint32_t lsb=(u>>drop)&1; u=(u+half-1+lsb)&~((1u<<drop)-1); std::memcpy(&x,&u,4); return x;}
inline float bf16(float x){ return round_mant(x,7);} 
inline float tf32(float x){ return round_mant(x,10);} 
inline float fp16(float x){ return round_mant(x,10);} // ignoring fp16 range (values small)
