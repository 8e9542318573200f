// Stand-ins for the evaluator's counter-based draws: U64(t,i) and Z(t,i) depend only on (seed, tensor, index).
#pragma once
#include <cstdint>
#include <cmath>
inline uint64_t mix64(uint64_t z){ z=(z^(z>>30))*0xbf58476d1ce4e5b9ULL; z=(z^(z>>27))*0x94d049bb133111ebULL; return z^(z>>31);} 
inline uint64_t U64(uint64_t seed, uint64_t tensor, uint64_t i){ return mix64(mix64(seed*0x9e3779b97f4a7c15ULL + tensor) + i*0xd1b54a32d192ed03ULL + 0x632be59bd9b4e019ULL);} 
inline double U01(uint64_t seed, uint64_t t, uint64_t i){ return (U64(seed,t,i)>>11)*(1.0/9007199254740992.0);} 
inline double Z(uint64_t seed, uint64_t t, uint64_t i){ double u1=(U64(seed,t,2*i)>>11)*(1.0/9007199254740992.0), u2=U01(seed,t^0x5555,i); if(u1<=0) u1=1e-300; return std::sqrt(-2*std::log(u1))*std::cos(6.283185307179586*u2);} 
