// Dot products of length K (U[-1,1] inputs) as GEMM outputs: fp32 FMA vs TF32 vs fp64, and for bf16
// inputs: fp32 accumulation + bf16 output vs bf16/fp16 accumulation, all against fp64.
#include "common.hpp"
int main(){ int Ks[]={16,112,1024,2048,3008,4096,16384}; Rng r(7);
 printf("sgemm: atol=3e-5*sqrt(K), rtol=0; max over S outputs of |err|/atol\n");
 for(int K:Ks){ int S = K<=112? 256: 20000; if(K==16384) S=4000; double fp32m=0,split=0,tf=0,fma_tree=0; std::vector<float> a(K),b(K);
  for(int s=0;s<S;s++){ for(int k=0;k<K;k++){a[k]=(float)(2*r.uni()-1); b[k]=(float)(2*r.uni()-1);} double ex=0; for(int k=0;k<K;k++) ex+=(double)a[k]*b[k];
   float acc=0; for(int k=0;k<K;k++) acc=std::fmaf(a[k],b[k],acc);
   float acc2[8]={0}; for(int k=0;k<K;k++) acc2[k%8]=std::fmaf(a[k],b[k],acc2[k%8]); float sp=((acc2[0]+acc2[1])+(acc2[2]+acc2[3]))+((acc2[4]+acc2[5])+(acc2[6]+acc2[7]));
   float t=0; for(int k=0;k<K;k++) t=std::fmaf(tf32(a[k]),tf32(b[k]),t);
   double tol=3e-5*std::sqrt((double)K); fp32m=std::max(fp32m,std::fabs(acc-ex)/tol); split=std::max(split,std::fabs(sp-ex)/tol); tf=std::max(tf,std::fabs(t-ex)/tol);}
  printf("  K=%5d S=%5d  fp32 sequential %.3f  fp32 8-way %.3f  TF32 %.2f\n",K,S,fp32m,split,tf);} 
 printf("hgemm: bf16 inputs; tol = atol + rtol*|ref|, ref = bf16(exact)\n");
 double atol_c[]={1e-4}; double rtol=1.6e-2;
 for(double ac: atol_c){ printf(" atol=%g*sqrt(K) rtol=%g\n",ac,rtol);
 for(int K:Ks){ int S = K<=112? 256: 20000; if(K==16384) S=3000; double good=0,good_rtz=0,bfacc=0,hacc=0; std::vector<float> a(K),b(K);
  for(int s=0;s<S;s++){ for(int k=0;k<K;k++){a[k]=bf16((float)(2*r.uni()-1)); b[k]=bf16((float)(2*r.uni()-1));} double ex=0; for(int k=0;k<K;k++) ex+=(double)a[k]*b[k]; double ref=bf16((float)ex);
   float acc=0; for(int k=0;k<K;k++) acc=std::fmaf(a[k],b[k],acc); float g=bf16(acc);
   uint32_t u; std::memcpy(&u,&acc,4); u&=0xffff0000u; float rtz; std::memcpy(&rtz,&u,4);
   float ba=0; for(int k=0;k<K;k++) ba=bf16(ba+a[k]*b[k]);
   float ha=0; for(int k=0;k<K;k++) ha=fp16(ha+fp16(a[k]*b[k]));
   double tol=ac*std::sqrt((double)K)+rtol*std::fabs(ref);
   good=std::max(good,std::fabs(g-ref)/tol); good_rtz=std::max(good_rtz,std::fabs(rtz-ref)/tol); bfacc=std::max(bfacc,std::fabs(bf16(ba)-ref)/tol); hacc=std::max(hacc,std::fabs(bf16(ha)-ref)/tol);}
  printf("  K=%5d  fp32acc+RN %.3f  fp32acc+truncate %.3f  bf16 accumulation %.2f  fp16 accumulation %.2f\n",K,good,good_rtz,bfacc,hacc);} }
}
