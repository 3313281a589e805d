// Command cometbft-gpuchain is CometBFT's own node, built from its Go module, with one
// addition: `start --app-home DIR` runs the gpuchain app inside this process, linked in
// as a library (../src/lib.rs), instead of reaching it over the ABCI socket. Every other
// command, flag and config file is CometBFT's; without --app-home, `start` connects to
// config.toml's proxy_app exactly as the `cometbft` binary does.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	cmd "github.com/cometbft/cometbft/cmd/cometbft/commands"
	cfg "github.com/cometbft/cometbft/config"
	"github.com/cometbft/cometbft/libs/cli"
	"github.com/cometbft/cometbft/libs/log"
	nm "github.com/cometbft/cometbft/node"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/proxy"
)

// appHome is --app-home: the gpuchain app's home (app.toml), or empty for proxy_app.
var appHome string

func main() {
	root := cmd.RootCmd
	root.AddCommand(
		cmd.GenValidatorCmd,
		cmd.InitFilesCmd,
		cmd.ResetAllCmd,
		cmd.ResetStateCmd,
		cmd.ShowValidatorCmd,
		cmd.TestnetFilesCmd,
		cmd.ShowNodeIDCmd,
		cmd.ReIndexEventCmd,
		cmd.GenNodeKeyCmd,
		cmd.VersionCmd,
		cmd.RollbackStateCmd,
		cmd.InspectCmd,
	)
	start := cmd.NewRunNodeCmd(newNode)
	start.Flags().StringVar(&appHome, "app-home", "",
		"run the gpuchain app whose app.toml is in this directory inside this process (proxy_app is then not used)")
	root.AddCommand(start)

	home := os.ExpandEnv(filepath.Join("$HOME", cfg.DefaultTendermintDir))
	if err := cli.PrepareBaseCmd(root, "CMT", home).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// newNode builds the node as CometBFT's default does, with the app in this process when
// --app-home is set.
func newNode(config *cfg.Config, logger log.Logger) (*nm.Node, error) {
	nodeKey, err := p2p.LoadOrGenNodeKey(config.NodeKeyFile())
	if err != nil {
		return nil, fmt.Errorf("loading the node key %s: %w", config.NodeKeyFile(), err)
	}
	clients := proxy.DefaultClientCreator(config.ProxyApp, config.ABCI, config.DBDir())
	if appHome != "" {
		app, err := openApp(appHome)
		if err != nil {
			return nil, err
		}
		// Each ABCI connection is served in order, as a socket connection is; CheckTx
		// and queries still run beside block execution, which the app orders itself.
		clients = queuedChecksCreator{app: app}
		logger.Info("gpuchain app in process", "app_home", appHome)
	}
	return nm.NewNode(config,
		privval.LoadOrGenFilePV(config.PrivValidatorKeyFile(), config.PrivValidatorStateFile()),
		nodeKey,
		clients,
		nm.DefaultGenesisDocProviderFunc(config),
		databases,
		nm.DefaultMetricsProvider(config.Instrumentation),
		logger,
	)
}
