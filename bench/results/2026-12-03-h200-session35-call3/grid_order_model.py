import heapq, random
def makespan(costs, sms=132):
    h=[0.0]*sms
    for c in costs:
        t=heapq.heappop(h); heapq.heappush(h,t+c)
    return max(h)
def grouped(w, heads, G):
    order=[]
    for g0 in range(0,heads,G):
        gl=min(G,heads-g0)
        for x in range(len(w)):
            for h in range(gl): order.append(w[x])
    return order
seq=16384
def docs(seed):
    rng=random.Random(seed)
    while True:
        lengths=[rng.randint(256,2048) for _ in range(12)]
        last=seq-sum(lengths)
        if 256<=last<=2048: return lengths+[last]
L=docs(0); ids=[d for d,n in enumerate(L) for _ in range(n)]
first={};lastpos={}
for i,d in enumerate(ids): first.setdefault(d,i); lastpos[d]=i
rows = {
 "causal bwd": [ (seq-k0)//64 + 2 for k0 in range(0,seq,128)],
 "prefix bwd": [ ((seq-k0)//64 if k0>=4096 else seq//64) + 2 for k0 in range(0,seq,128)],
 "window bwd": [ min(18,(seq-k0)//64) + 2 for k0 in range(0,seq,128)],
 "doc bwd": [max(lastpos[d] for d in set(ids[k0:k0+128]))//64-k0//64+1+2 for k0 in range(0,seq,128)],
 "causal fwd": [ (q0//128+1) + 1.5 for q0 in range(0,seq,128)][::-1],
 "prefix fwd": [ (max(q0//128+1, 32)) + 1.5 for q0 in range(0,seq,128)][::-1],
 "doc fwd": [min(q0+127,seq-1)//128-min(first[d] for d in set(ids[q0:q0+128]))//128+1+1.5 for q0 in range(0,seq,128)][::-1],
}
for S,B in ((1024,16),(4096,4)):
    rows["causal bwd S=%d"%S]=[(S-k0)//64+2 for k0 in range(0,S,128)]
for name,w in rows.items():
    heads=16
    if "S=" in name:
        B=16384//int(name.split("=")[1]); w2=w; heads=16*B
    lb=sum(w)*heads/132
    out=[]
    for G in (1,2,4,8,16):
        out.append("G%d %+.1f%%"%(G,100*(makespan(grouped(w,heads,G))/lb-1)))
    print("%-18s"%name, "  ".join(out))
