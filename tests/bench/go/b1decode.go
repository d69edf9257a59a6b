// B1's Go baseline: what a client-go controller (such as upstream Kuscia's) pays to decode a
// pod watch event. Each line of the input is one watch event; it is decoded with encoding/json
// into typed structs shaped like k8s.io/api/core/v1 (the fields the Kuscia pod fixture has,
// times as time.Time as metav1.Time decodes them), and the same 8 fields as B1 are read.
//
// usage: b1decode <events file> <rounds>   prints "events/s: N" (median of 3 repetitions)
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"
)

type ObjectMeta struct {
	Name              string            `json:"name,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	Generation        int64             `json:"generation,omitempty"`
	CreationTimestamp time.Time         `json:"creationTimestamp,omitempty"`
	DeletionTimestamp *time.Time        `json:"deletionTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	OwnerReferences   []OwnerReference  `json:"ownerReferences,omitempty"`
	Finalizers        []string          `json:"finalizers,omitempty"`
}

type OwnerReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Controller *bool  `json:"controller,omitempty"`
}

type Toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"`
}

type ContainerPort struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol,omitempty"`
}

type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	SubPath   string `json:"subPath,omitempty"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

type ResourceRequirements struct {
	Limits   map[string]string `json:"limits,omitempty"`
	Requests map[string]string `json:"requests,omitempty"`
}

type Container struct {
	Name                     string               `json:"name"`
	Image                    string               `json:"image,omitempty"`
	ImagePullPolicy          string               `json:"imagePullPolicy,omitempty"`
	Command                  []string             `json:"command,omitempty"`
	Args                     []string             `json:"args,omitempty"`
	WorkingDir               string               `json:"workingDir,omitempty"`
	Ports                    []ContainerPort      `json:"ports,omitempty"`
	Env                      []EnvVar             `json:"env,omitempty"`
	VolumeMounts             []VolumeMount        `json:"volumeMounts,omitempty"`
	Resources                ResourceRequirements `json:"resources,omitempty"`
	TerminationMessagePath   string               `json:"terminationMessagePath,omitempty"`
	TerminationMessagePolicy string               `json:"terminationMessagePolicy,omitempty"`
}

type ConfigMapVolumeSource struct {
	Name        string `json:"name,omitempty"`
	DefaultMode *int32 `json:"defaultMode,omitempty"`
}

type Volume struct {
	Name      string                 `json:"name"`
	ConfigMap *ConfigMapVolumeSource `json:"configMap,omitempty"`
}

type PodSpec struct {
	RestartPolicy                string            `json:"restartPolicy,omitempty"`
	SchedulerName                string            `json:"schedulerName,omitempty"`
	AutomountServiceAccountToken *bool             `json:"automountServiceAccountToken,omitempty"`
	NodeName                     string            `json:"nodeName,omitempty"`
	NodeSelector                 map[string]string `json:"nodeSelector,omitempty"`
	Tolerations                  []Toleration      `json:"tolerations,omitempty"`
	Containers                   []Container       `json:"containers"`
	Volumes                      []Volume          `json:"volumes,omitempty"`
}

type PodCondition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	LastProbeTime      *time.Time `json:"lastProbeTime,omitempty"`
	LastTransitionTime time.Time  `json:"lastTransitionTime,omitempty"`
	Reason             string     `json:"reason,omitempty"`
	Message            string     `json:"message,omitempty"`
}

type ContainerStateRunning struct {
	StartedAt time.Time `json:"startedAt,omitempty"`
}

type ContainerStateWaiting struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

type ContainerStateTerminated struct {
	ExitCode   int32     `json:"exitCode"`
	Reason     string    `json:"reason,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitempty"`
	FinishedAt time.Time `json:"finishedAt,omitempty"`
}

type ContainerState struct {
	Waiting    *ContainerStateWaiting    `json:"waiting,omitempty"`
	Running    *ContainerStateRunning    `json:"running,omitempty"`
	Terminated *ContainerStateTerminated `json:"terminated,omitempty"`
}

type ContainerStatus struct {
	Name         string         `json:"name"`
	State        ContainerState `json:"state,omitempty"`
	LastState    ContainerState `json:"lastState,omitempty"`
	Ready        bool           `json:"ready"`
	RestartCount int32          `json:"restartCount"`
	Image        string         `json:"image"`
	ImageID      string         `json:"imageID"`
	ContainerID  string         `json:"containerID,omitempty"`
	Started      *bool          `json:"started,omitempty"`
}

type PodIP struct {
	IP string `json:"ip,omitempty"`
}

type PodStatus struct {
	Phase             string            `json:"phase,omitempty"`
	Conditions        []PodCondition    `json:"conditions,omitempty"`
	HostIP            string            `json:"hostIP,omitempty"`
	PodIP             string            `json:"podIP,omitempty"`
	PodIPs            []PodIP           `json:"podIPs,omitempty"`
	StartTime         *time.Time        `json:"startTime,omitempty"`
	ContainerStatuses []ContainerStatus `json:"containerStatuses,omitempty"`
	QOSClass          string            `json:"qosClass,omitempty"`
}

type Pod struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata,omitempty"`
	Spec       PodSpec    `json:"spec,omitempty"`
	Status     PodStatus  `json:"status,omitempty"`
}

type WatchEvent struct {
	Type   string `json:"type"`
	Object Pod    `json:"object"`
}

// The 8 fields B1 projects, read from the typed object.
func extract(p *Pod) int {
	n := len(p.Metadata.CreationTimestamp.String())
	n += len(p.Metadata.Labels["kuscia.secretflow/task-uid"])
	n += len(p.Metadata.Annotations["kuscia.secretflow/task-id"])
	n += len(p.Spec.NodeName) + len(p.Status.Phase)
	if p.Status.StartTime != nil {
		n += len(p.Status.StartTime.String())
	}
	if len(p.Status.Conditions) > 1 {
		n += len(p.Status.Conditions[1].LastTransitionTime.String())
	}
	if len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil {
		n += len(p.Status.ContainerStatuses[0].State.Running.StartedAt.String())
	}
	return n
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: b1decode <events file> <rounds>")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rounds, err := strconv.Atoi(os.Args[2])
	if err != nil || rounds < 1 {
		fmt.Fprintln(os.Stderr, "rounds must be a positive number")
		os.Exit(2)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			lines = append(lines, append([]byte(nil), sc.Bytes()...))
		}
	}
	checksum := 0
	var rates []float64
	for rep := 0; rep < 3; rep++ {
		start := time.Now()
		for r := 0; r < rounds; r++ {
			for _, l := range lines {
				var ev WatchEvent // a new object per event, as the informer stores it
				if err := json.Unmarshal(l, &ev); err != nil {
					fmt.Fprintln(os.Stderr, "decode:", err)
					os.Exit(1)
				}
				checksum += extract(&ev.Object)
			}
		}
		rates = append(rates, float64(rounds*len(lines))/time.Since(start).Seconds())
	}
	sort.Float64s(rates)
	fmt.Printf("events/s: %.0f\nchecksum: %d\n", rates[1], checksum)
}
