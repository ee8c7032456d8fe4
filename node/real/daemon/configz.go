package daemon

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// KubeletConfiguration is the effective configuration in the kubelet's
// v1beta1 form, as /configz reports it: every option lockstep honours,
// whether it came from a flag, the config file or the default.
func (o *Options) KubeletConfiguration() *kubeletv1beta1.KubeletConfiguration {
	dur := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
	qps := o.APIQPS
	eventQPS := o.EventQPS
	anonymous, webhook := false, o.Kubeconfig != ""
	systemLogs, profiling, register := o.EnableSystemLogHandler, o.EnableProfilingHandler, o.RegisterNode
	resolv := o.ResolvConf
	taints, _ := ParseTaints(o.RegisterWithTaints)
	if taints == nil {
		taints = []corev1.Taint{}
	}
	maxImages := o.NodeStatusMaxImages
	healthzPort := o.HealthzPort
	var byPriority []kubeletv1beta1.ShutdownGracePeriodByPodPriority
	for _, g := range o.ShutdownGracePeriodByPodPriority {
		byPriority = append(byPriority, kubeletv1beta1.ShutdownGracePeriodByPodPriority{Priority: g.Priority, ShutdownGracePeriodSeconds: g.GracePeriodSeconds})
	}
	g := o.GC
	return &kubeletv1beta1.KubeletConfiguration{
		ImageGCHighThresholdPercent:      &g.ImageGCHighThresholdPercent,
		ImageGCLowThresholdPercent:       &g.ImageGCLowThresholdPercent,
		ImageMinimumGCAge:                dur(g.ImageMinimumGCAge),
		ImageMaximumGCAge:                dur(g.ImageMaximumGCAge),
		ContainerLogMaxSize:              g.ContainerLogMaxSize,
		ContainerLogMaxFiles:             &g.ContainerLogMaxFiles,
		ContainerLogMaxWorkers:           &g.ContainerLogMaxWorkers,
		ContainerLogMonitorInterval:      &metav1.Duration{Duration: g.ContainerLogMonitorInterval},
		StaticPodPath:                    o.ManifestPath,
		StaticPodURL:                     o.ManifestURL,
		StaticPodURLHeader:               o.ManifestURLHeader,
		HTTPCheckFrequency:               dur(o.HTTPCheckFrequency),
		NodeStatusMaxImages:              &maxImages,
		ShutdownGracePeriod:              dur(o.ShutdownGracePeriod),
		ShutdownGracePeriodCriticalPods:  dur(o.ShutdownGracePeriodCriticalPods),
		ShutdownGracePeriodByPodPriority: byPriority,
		PodLogsDir:                       o.PodLogsRoot,
		SyncFrequency:                    dur(o.SyncFrequency),
		FileCheckFrequency:               dur(o.FileCheckFrequency),
		Address:                          o.Address,
		Port:                             o.Port,
		ReadOnlyPort:                     o.ReadOnlyPort,
		HealthzPort:                      &healthzPort,
		HealthzBindAddress:               o.HealthzBindAddress,
		TLSCertFile:                      o.TLSCertFile,
		TLSPrivateKeyFile:                o.TLSKeyFile,
		RotateCertificates:               o.RotateCertificates,
		ServerTLSBootstrap:               o.RotateServerCertificates,
		Authentication: kubeletv1beta1.KubeletAuthentication{
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: o.ClientCAFile},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: &webhook},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: &anonymous},
		},
		Authorization:             kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationMode(o.AuthorizationMode)},
		ClusterDomain:             o.ClusterDomain,
		ClusterDNS:                o.ClusterDNS,
		ResolverConfig:            &resolv,
		RuntimeRequestTimeout:     dur(o.RuntimeRequestTimeout),
		MaxPods:                   o.MaxPods,
		NodeStatusUpdateFrequency: dur(o.NodeStatusUpdateFrequency),
		NodeStatusReportFrequency: dur(o.NodeStatusReportFrequency),
		NodeLeaseDurationSeconds:  o.NodeLeaseDurationSeconds,
		KubeAPIQPS:                &qps,
		KubeAPIBurst:              o.APIBurst,
		EventRecordQPS:            &eventQPS,
		EventBurst:                o.EventBurst,
		ContainerRuntimeEndpoint:  o.RuntimeEndpoint,
		ImageServiceEndpoint:      o.ImageEndpoint,
		AllowedUnsafeSysctls:      o.AllowedUnsafeSysctls,
		RegisterNode:              &register,
		RegisterWithTaints:        taints,
		EnableSystemLogHandler:    &systemLogs,
		EnableProfilingHandler:    &profiling,
	}
}
