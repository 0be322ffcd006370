package topo

// TreeNode is one node's links in a tree: its parent and up to two
// children, -1 where there is none.
type TreeNode struct {
	Parent   int
	Children [2]int
}

// NumChildren counts the node's children.
func (t TreeNode) NumChildren() int {
	n := 0
	for _, c := range t.Children {
		if c >= 0 {
			n++
		}
	}
	return n
}

// BinaryTree is node i's place in the binary tree over n nodes that NCCL's
// tree0 uses. Node 0 is the root and its only child is the largest power of
// two below n. Any other node is an interior node of the level given by its
// lowest set bit b: its parent is i-b+2b when that exists and has i as the
// child below it, else i-b; its children sit half a level down, at i-b/2
// and at i+b/2 (or the largest smaller step that stays below n).
func BinaryTree(n, i int) TreeNode {
	node := TreeNode{Parent: -1, Children: [2]int{-1, -1}}
	if n <= 1 {
		return node
	}
	if i == 0 {
		top := 1
		for top*2 < n {
			top *= 2
		}
		node.Children[1] = top
		return node
	}
	low := i & -i // lowest set bit: the node's level
	up := (i ^ low) | (low << 1)
	if up >= n {
		up = i ^ low
	}
	node.Parent = up
	for step := low >> 1; step > 0; step >>= 1 {
		if node.Children[0] < 0 {
			node.Children[0] = i - step // always in range: i - step > i - low >= 0
		}
		if i+step < n {
			node.Children[1] = i + step
			break
		}
	}
	return node
}

// DoubleTree returns node i's places in the two trees of a double binary
// tree over n nodes (NCCL's double binary tree): tree 0 is BinaryTree; tree
// 1 is tree 0 mirrored (node r plays node n-1-r) when n is even, and shifted
// by one (node r plays node r-1) when n is odd, so that most nodes that are
// leaves in one tree are interior in the other and the two roots differ.
func DoubleTree(n, i int) [2]TreeNode {
	var out [2]TreeNode
	out[0] = BinaryTree(n, i)
	var from, to func(int) int
	if n%2 == 0 {
		from = func(r int) int { return n - 1 - r }
		to = from
	} else {
		from = func(r int) int { return (r - 1 + n) % n }
		to = func(r int) int { return (r + 1) % n }
	}
	t := BinaryTree(n, from(i))
	mapNode := func(r int) int {
		if r < 0 {
			return -1
		}
		return to(r)
	}
	out[1] = TreeNode{Parent: mapNode(t.Parent), Children: [2]int{mapNode(t.Children[0]), mapNode(t.Children[1])}}
	return out
}

// RankTrees places every rank in the two trees when ranks are grouped into
// hosts: hostOf[r] is rank r's host (hosts numbered 0..h-1, each with at
// least one rank). Hosts form a double binary tree; inside a host the
// ranks form a chain in rank order, whose first rank links to the host's
// tree neighbours. The result is indexed [tree][rank].
func RankTrees(hostOf []int) [2][]TreeNode {
	nHosts := 0
	for _, h := range hostOf {
		nHosts = max(nHosts, h+1)
	}
	members := make([][]int, nHosts)
	for r, h := range hostOf {
		members[h] = append(members[h], r)
	}
	var out [2][]TreeNode
	for t := range out {
		out[t] = make([]TreeNode, len(hostOf))
		for r := range out[t] {
			out[t][r] = TreeNode{Parent: -1, Children: [2]int{-1, -1}}
		}
	}
	for h, ranks := range members {
		trees := DoubleTree(nHosts, h)
		for t := range out {
			// The chain: each rank's child is the next rank of the host.
			for k, r := range ranks {
				if k > 0 {
					out[t][r].Parent = ranks[k-1]
				}
				if k+1 < len(ranks) {
					out[t][r].Children[0] = ranks[k+1]
				}
			}
			// The host's head rank carries its host's tree links; the child
			// hosts hang off the chain's last rank, so a host's ranks reduce
			// in a line before their head passes the result up.
			head, tail := ranks[0], ranks[len(ranks)-1]
			if p := trees[t].Parent; p >= 0 {
				out[t][head].Parent = members[p][len(members[p])-1]
			}
			slot := 0 // the tail ends the chain: both its child slots are free
			for _, c := range trees[t].Children {
				if c < 0 {
					continue
				}
				for out[t][tail].Children[slot] >= 0 {
					slot++
				}
				out[t][tail].Children[slot] = members[c][0]
			}
		}
	}
	return out
}

// Depth is the number of hops from the deepest node of a tree to its root
// (0 for a single node). nodes is one tree, indexed by node, as RankTrees
// returns it.
func Depth(nodes []TreeNode) int {
	depth := 0
	for i := range nodes {
		d := 0
		for j := i; nodes[j].Parent >= 0 && d <= len(nodes); j = nodes[j].Parent {
			d++
		}
		depth = max(depth, d)
	}
	return depth
}
