// LayerNorm variants in fp32 vs an fp64 reference.
#include "common.hpp"
enum V { TWO_BLOCK, TWO_WARP, ONE_BLOCK, ONE_WARP, WELFORD_BLOCK, ONE_F64 };
const char* names[]={"two-pass block256","two-pass warp32","single-pass block256","single-pass warp32","welford block256","single-pass fp64"};
float tree(std::vector<float> p){ while(p.size()>1){ size_t h=p.size()/2; for(size_t i=0;i<h;i++) p[i]=p[i]+p[i+h]; p.resize(h);} return p[0]; }
int main(int argc,char**argv){ double mu=atof(argv[1]); double sd=argc>2?atof(argv[2]):1.0; int Ns[]={1,129,1024,4097,6000,16384}; const float eps=1e-5f;
 double atols[]={atof(getenv("ATOL"))}; double rtol=1e-5;
 for(int v=0;v<6;v++){ double worst=0, worst_ratio=0; Rng r(42+v);
  for(int N: Ns){ int rows = N<=1024? 200: 40; std::vector<float> x(N), g(N), b(N); for(int i=0;i<N;i++){g[i]=0.5+r.uni(); b[i]=-1+2*r.uni();}
   for(int row=0;row<rows;row++){ for(auto&e:x) e=(float)(mu+sd*r.normal());
    double m=0; for(float e:x) m+=e; m/=N; double var=0; for(float e:x) var+=(e-m)*(e-m); var/=N; double rs=1/std::sqrt(var+(double)eps);
    float mean,rstd; int P = (v==TWO_WARP||v==ONE_WARP)?32:256; if(getenv("P")) P=atoi(getenv("P"));
    if(v==TWO_BLOCK||v==TWO_WARP){ std::vector<float> p(P,0); for(int i=0;i<N;i++) p[i%P]+=x[i]; mean=tree(p)/N; std::fill(p.begin(),p.end(),0); for(int i=0;i<N;i++){float d=x[i]-mean; p[i%P]+=d*d;} float vv=tree(p)/N; rstd=1.0f/std::sqrt(vv+eps);} 
    else if(v==ONE_BLOCK||v==ONE_WARP){ std::vector<float> p(P,0),q(P,0); for(int i=0;i<N;i++){p[i%P]+=x[i]; q[i%P]+=x[i]*x[i];} mean=tree(p)/N; float vv=tree(q)/N-mean*mean; if(vv<0)vv=0; rstd=1.0f/std::sqrt(vv+eps);} 
    else if(v==WELFORD_BLOCK){ std::vector<float> cnt(P,0),mm(P,0),M2(P,0); for(int i=0;i<N;i++){int t=i%P; cnt[t]+=1; float d=x[i]-mm[t]; mm[t]+=d/cnt[t]; M2[t]+=d*(x[i]-mm[t]);} 
      size_t n=P; while(n>1){ size_t h=n/2; for(size_t i=0;i<h;i++){ float na=cnt[i], nb=cnt[i+h]; float nn=na+nb; if(nn==0) continue; float d=mm[i+h]-mm[i]; mm[i]=mm[i]+d*nb/nn; M2[i]=M2[i]+M2[i+h]+d*d*na*nb/nn; cnt[i]=nn;} n=h;} mean=mm[0]; rstd=1.0f/std::sqrt(M2[0]/N+eps);} 
    else { double s=0,q=0; for(float e:x){s+=e;q+=(double)e*e;} double mm=s/N; mean=(float)mm; rstd=(float)(1/std::sqrt(q/N-mm*mm+eps)); }
    for(int i=0;i<N;i++){ float y=(x[i]-mean)*rstd*g[i]+b[i]; double yr=(x[i]-m)*rs*g[i]+b[i]; yr=(float)yr; double err=std::fabs(y-yr); worst=std::max(worst,err); worst_ratio=std::max(worst_ratio, err/(atols[0]+rtol*std::fabs(yr))); }
   } }
  printf("mu=%5.1f sd=%.1f %-22s max|err|=%.3g  max err/tol(atol=%g,rtol=%g)=%.3g\n",mu,sd,names[v],worst,atols[0],rtol,worst_ratio); }
}
