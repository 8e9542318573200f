#include "common.hpp"
int main(){ struct C{int nx,ny,T;}; C cs[]={{3,3,1},{5,7,2},{64,33,7},{1000,999,13},{1,17,3},{2,9,5},{1200,700,37},{4096,300,100}}; Rng r(3);
 for(auto c:cs){ size_t n=(size_t)c.nx*c.ny; std::vector<float> u(n); for(auto&v:u) v=(float)r.uni();
  std::vector<double> d(u.begin(),u.end()), d2=d; std::vector<float> f=u, f2=u, g=u, g2=u; std::vector<double> prev;
  for(int t=0;t<c.T;t++){ prev=d; for(int y=0;y<c.ny;y++) for(int x=0;x<c.nx;x++){ size_t i=(size_t)y*c.nx+x; if(x==0||y==0||x==c.nx-1||y==c.ny-1){d2[i]=d[i]; f2[i]=f[i]; g2[i]=g[i]; continue;}
     d2[i]=0.25*(d[i-1]+d[i+1]+d[i-c.nx]+d[i+c.nx]); f2[i]=0.25f*((f[i-1]+f[i+1])+(f[i-c.nx]+f[i+c.nx])); g2[i]=std::fmaf(0.25f,f[i-1],std::fmaf(0.25f,f[i+1],std::fmaf(0.25f,f[i-c.nx],0.25f*f[i+c.nx]))); }
   std::swap(d,d2); std::swap(f,f2); std::swap(g,g2);} 
  double tol=1e-6+2e-7*c.T, ef=0, eg=0, ep=0, einp=0; for(size_t i=0;i<n;i++){ double ref=(float)d[i]; ef=std::max(ef,std::fabs(f[i]-ref)); eg=std::max(eg,std::fabs(g[i]-ref)); ep=std::max(ep,std::fabs((float)prev[i]-ref)); }
  printf("%5dx%-4d T=%3d tol=%.2g | fp32 %.3f  fma-chain %.3f | T-1 steps (parity bug) %.1f x tol\n",c.nx,c.ny,c.T,tol,ef/tol,eg/tol,ep/tol);} }
