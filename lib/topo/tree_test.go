package topo

import "testing"

// checkTree verifies that nodes form one tree: exactly one root, every
// parent/child link appears from both ends, at most two children, every
// node reaches the root (no cycle), and returns the root.
func checkTree(t *testing.T, what string, nodes []TreeNode) int {
	t.Helper()
	n := len(nodes)
	root := -1
	for i, nd := range nodes {
		if nd.Parent < 0 {
			if root >= 0 {
				t.Fatalf("%s: two roots, %d and %d", what, root, i)
			}
			root = i
			continue
		}
		if nd.Parent >= n || nd.Parent == i {
			t.Fatalf("%s: node %d has parent %d", what, i, nd.Parent)
		}
		p := nodes[nd.Parent]
		if p.Children[0] != i && p.Children[1] != i {
			t.Fatalf("%s: node %d's parent %d does not list it as a child (%v)", what, i, nd.Parent, p.Children)
		}
	}
	if root < 0 {
		t.Fatalf("%s: no root", what)
	}
	for i, nd := range nodes {
		if nd.Children[0] >= 0 && nd.Children[0] == nd.Children[1] {
			t.Fatalf("%s: node %d lists child %d twice", what, i, nd.Children[0])
		}
		for _, c := range nd.Children {
			if c >= 0 && (c >= n || nodes[c].Parent != i) {
				t.Fatalf("%s: node %d lists child %d whose parent is %d", what, i, c, nodes[c].Parent)
			}
		}
		steps := 0
		for j := i; nodes[j].Parent >= 0; j = nodes[j].Parent {
			if steps++; steps > n {
				t.Fatalf("%s: node %d never reaches the root (cycle)", what, i)
			}
		}
	}
	return root
}

func TestDoubleTreeEveryHostCount(t *testing.T) {
	for n := 1; n <= 64; n++ {
		var trees [2][]TreeNode
		for i := 0; i < n; i++ {
			d := DoubleTree(n, i)
			if d[0] != BinaryTree(n, i) {
				t.Fatalf("n=%d: tree 0 of node %d is not BinaryTree", n, i)
			}
			trees[0] = append(trees[0], d[0])
			trees[1] = append(trees[1], d[1])
		}
		r0 := checkTree(t, "tree0", trees[0])
		r1 := checkTree(t, "tree1", trees[1])
		if r0 != 0 {
			t.Fatalf("n=%d: tree 0 is rooted at %d, want 0", n, r0)
		}
		// Tree 1 is tree 0 mirrored (even n) or shifted by one (odd n).
		for i := 0; i < n; i++ {
			src, dst := n-1-i, func(r int) int { return n - 1 - r }
			if n%2 == 1 {
				src, dst = (i-1+n)%n, func(r int) int { return (r + 1) % n }
			}
			a, b := trees[0][src], trees[1][i]
			m := func(r int) int {
				if r < 0 {
					return -1
				}
				return dst(r)
			}
			if b.Parent != m(a.Parent) || b.Children[0] != m(a.Children[0]) || b.Children[1] != m(a.Children[1]) {
				t.Fatalf("n=%d: tree 1 at node %d is %+v, want tree 0 at %d (%+v) mapped", n, i, b, src, a)
			}
		}
		if n > 1 && r1 == r0 {
			t.Fatalf("n=%d: both trees are rooted at %d", n, r0)
		}
		// The point of two trees: for n >= 3, no node is interior in both.
		// (NCCL's construction guarantees it for even n; check it there.)
		if n%2 == 0 && n >= 4 {
			for i := 0; i < n; i++ {
				if trees[0][i].NumChildren() == 2 && trees[1][i].NumChildren() == 2 {
					t.Fatalf("n=%d: node %d has two children in both trees", n, i)
				}
			}
		}
	}
}

func TestBinaryTreeSmall(t *testing.T) {
	// Hand-checked: 5 nodes -> 0 -> 4 -> 2 -> {1, 3}.
	want := []TreeNode{
		{Parent: -1, Children: [2]int{-1, 4}},
		{Parent: 2, Children: [2]int{-1, -1}},
		{Parent: 4, Children: [2]int{1, 3}},
		{Parent: 2, Children: [2]int{-1, -1}},
		{Parent: 0, Children: [2]int{2, -1}},
	}
	for i, w := range want {
		if got := BinaryTree(5, i); got != w {
			t.Errorf("BinaryTree(5, %d) = %+v, want %+v", i, got, w)
		}
	}
}

func TestRankTreesChainsInsideHosts(t *testing.T) {
	for hosts := 1; hosts <= 64; hosts++ {
		for per := 1; per <= 4; per++ {
			hostOf := make([]int, hosts*per)
			for r := range hostOf {
				hostOf[r] = r / per
			}
			trees := RankTrees(hostOf)
			for k, tr := range trees {
				root := checkTree(t, "rank tree", tr)
				if hostOf[root] != doubleTreeRoot(hosts, k) || root%per != 0 {
					t.Fatalf("hosts=%d per=%d tree %d: root rank %d is not the head of host %d", hosts, per, k, root, doubleTreeRoot(hosts, k))
				}
				// Inside a host the ranks form a chain in rank order.
				for r := range tr {
					if r%per != 0 && tr[r].Parent != r-1 {
						t.Fatalf("hosts=%d per=%d tree %d: rank %d's parent is %d, want %d (chain)", hosts, per, k, r, tr[r].Parent, r-1)
					}
				}
			}
		}
	}
}

// doubleTreeRoot is the root node of tree k over n nodes.
func doubleTreeRoot(n, k int) int {
	for i := 0; i < n; i++ {
		if DoubleTree(n, i)[k].Parent < 0 {
			return i
		}
	}
	return -1
}

func TestDepth(t *testing.T) {
	if d := Depth([]TreeNode{{Parent: -1, Children: [2]int{-1, -1}}}); d != 0 {
		t.Fatalf("one node: depth %d, want 0", d)
	}
	// A chain of 4 ranks on one host: 3 hops.
	if d := Depth(RankTrees([]int{0, 0, 0, 0})[0]); d != 3 {
		t.Fatalf("chain of 4: depth %d, want 3", d)
	}
	// 8 hosts of 1 rank: tree 0 is 0 -> 4 -> {2, 6} -> {1, 3, 5, 7}: 3 hops.
	if d := Depth(RankTrees([]int{0, 1, 2, 3, 4, 5, 6, 7})[0]); d != 3 {
		t.Fatalf("8 hosts: depth %d, want 3", d)
	}
	// 2 hosts of 2 ranks: host 0's chain (2 ranks), then host 1's chain
	// hangs off host 0's tail: 3 hops.
	if d := Depth(RankTrees([]int{0, 0, 1, 1})[0]); d != 3 {
		t.Fatalf("2x2: depth %d, want 3", d)
	}
}
