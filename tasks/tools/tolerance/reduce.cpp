// reduce_sum: x ~ N(3, 2^2) + plants; fp32 strategies vs fp64; tolerance 2e-6 * sum|x|.
#include "common.hpp"
int main(int argc,char**argv){ long ns[]={1,1025,65537,1000003,1L<<25,1L<<28,300000007L}; double coef=atof(argv[1]); Rng r(5);
 for(long n: ns){ std::vector<float> x(n); for(long i=0;i<n;i++) x[i]=(float)(3+2*r.normal());
  auto plant=[&](long i,float v){ if(i>=0&&i<n) x[i]=v; }; plant(0,1.0e5f); plant(n/2,1.25e5f); plant(std::max(n-3,0L),1.5e5f); plant(std::max(n-2,0L),1.75e5f); plant(n-1,2.0e5f);
  double ex=0, sa=0; for(float v:x){ex+=v; sa+=std::fabs(v);} double tol=coef*sa;
  // grid-stride: T threads, each sequential fp32, then per-block tree of 256, then blocks summed sequentially (atomics)
  auto gs=[&](long T){ std::vector<float> p(T,0); for(long i=0;i<n;i++) p[i%T]+=x[i]; float tot=0; for(long b=0;b<T;b+=256){ std::vector<float> q(p.begin()+b,p.begin()+std::min(T,b+256)); while(q.size()>1){ size_t h=(q.size()+1)/2; for(size_t i=0;i+h<q.size();i++) q[i]+=q[i+h]; q.resize(h);} tot+=q[0]; } return tot; };
  float a=gs(1024*256), b=gs(1024), c=gs(32); float at=0; for(long b0=0;b0<n;b0+=2048){ std::vector<float> q(256,0); for(long i=b0;i<std::min(n,b0+2048);i++) q[(i-b0)%256]+=x[i]; while(q.size()>1){ size_t h=q.size()/2; for(size_t i=0;i<h;i++) q[i]+=q[i+h]; q.resize(h);} at+=q[0]; } float seq=0; for(long i=0;i<n;i++) seq+=x[i];
  float drop1=0; for(long i=0;i+1<n;i++) drop1+=x[i]; double dropmid = ex - x[n/3 + (n>3)]; // skip one ordinary element
  printf("n=%10ld tol=%.3g | 262144 thr %.3g | 1024 thr %.3g | 32 thr %.3g | 1 thread %.3g | atomic per 2048-block %.3g || drop last %.3g | drop one interior %.3g\n", n, tol, std::fabs(a-ex)/tol, std::fabs(b-ex)/tol, std::fabs(c-ex)/tol, std::fabs(seq-ex)/tol, std::fabs(at-ex)/tol, n>1?std::fabs(drop1-ex)/tol:0.0, n>4?std::fabs(dropmid-ex)/tol:0.0);} }
